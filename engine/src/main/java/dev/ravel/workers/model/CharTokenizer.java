package dev.ravel.workers.model;

import java.util.Objects;

/**
 * One token per character of a fixed alphabet: character {@code alphabet.charAt(i)} is id {@code i} and
 * the end-of-sequence token is id {@code alphabet.length()}, the last of the vocabulary. Immutable.
 */
public final class CharTokenizer implements Tokenizer {
  /** The characters of {@link #arithmetic()}: the digits, plus, minus and equals. */
  public static final String ARITHMETIC_ALPHABET = "0123456789+-=";

  private final String alphabet;

  private CharTokenizer(String alphabet) {
    this.alphabet = alphabet;
  }

  /** The tokenizer of {@code ArithmeticTask}: {@value #ARITHMETIC_ALPHABET} and EOS, 14 ids. */
  public static CharTokenizer arithmetic() {
    return of(ARITHMETIC_ALPHABET);
  }

  /** A tokenizer over the distinct characters of {@code alphabet} (BMP characters, at least one). */
  public static CharTokenizer of(String alphabet) {
    Objects.requireNonNull(alphabet, "alphabet");
    if (alphabet.isEmpty()) {
      throw new IllegalArgumentException("alphabet must not be empty");
    }
    for (int i = 0; i < alphabet.length(); i++) {
      char c = alphabet.charAt(i);
      if (Character.isSurrogate(c)) {
        throw new IllegalArgumentException("alphabet: surrogate characters are not supported (index " + i + ")");
      }
      if (alphabet.indexOf(c) != i) {
        throw new IllegalArgumentException("alphabet: character " + describe(c) + " appears twice");
      }
    }
    return new CharTokenizer(alphabet);
  }

  /** The characters, in id order. */
  public String alphabet() {
    return alphabet;
  }

  @Override
  public int vocabSize() {
    return alphabet.length() + 1;
  }

  @Override
  public int eos() {
    return alphabet.length();
  }

  @Override
  public int[] encode(String text) {
    Objects.requireNonNull(text, "text");
    int[] ids = new int[text.length()];
    for (int i = 0; i < ids.length; i++) {
      char c = text.charAt(i);
      int id = alphabet.indexOf(c);
      if (id < 0) {
        throw new IllegalArgumentException(
            "character " + describe(c) + " at index " + i + " is not in the vocabulary \"" + alphabet + "\"");
      }
      ids[i] = id;
    }
    return ids;
  }

  @Override
  public String decode(int[] tokens, int from, int to) {
    Objects.requireNonNull(tokens, "tokens");
    if (from < 0 || to > tokens.length || from > to) {
      throw new IllegalArgumentException(
          "tokens: range [" + from + ", " + to + ") is outside an array of " + tokens.length);
    }
    StringBuilder sb = new StringBuilder(to - from);
    for (int i = from; i < to; i++) {
      int id = tokens[i];
      if (id < 0 || id > eos()) {
        throw new IllegalArgumentException(
            "tokens[" + i + "] = " + id + " is outside the vocabulary [0, " + vocabSize() + ")");
      }
      if (id != eos()) {
        sb.append(alphabet.charAt(id));
      }
    }
    return sb.toString();
  }

  private static String describe(char c) {
    return String.format("'%s' (U+%04X)", Character.isISOControl(c) ? "?" : String.valueOf(c), (int) c);
  }

  @Override
  public String toString() {
    return "CharTokenizer{alphabet=\"" + alphabet + "\", eos=" + eos() + "}";
  }
}
