"""The official OpenAI Python client against `ravel serve` (run by OpenAiClientIT, which starts the server).

The server's address comes from RAVEL_SERVE_URL. The trace context of the traced request and the request
ids of the traced and untraced requests are constants here; OpenAiClientIT passes the same values in
RAVEL_TEST_TRACE_ID, RAVEL_TEST_PARENT_ID, RAVEL_TEST_TRACED_REQUEST_ID and RAVEL_TEST_ROOT_REQUEST_ID
and checks the server's `llm_request` spans of those requests afterwards.
"""

from __future__ import annotations

import os
import re

import openai
import pytest
from openai import OpenAI
from openai.types import Completion
from openai.types.chat import ChatCompletion

TRACE_ID: str = os.environ.get("RAVEL_TEST_TRACE_ID", "4bf92f3577b34da6a3ce929d0e0e4736")
PARENT_ID: str = os.environ.get("RAVEL_TEST_PARENT_ID", "00f067aa0ba902b7")
TRACED_REQUEST_ID: str = os.environ.get("RAVEL_TEST_TRACED_REQUEST_ID", "pyclient-traced")
ROOT_REQUEST_ID: str = os.environ.get("RAVEL_TEST_ROOT_REQUEST_ID", "pyclient-root")

MODEL: str = "ravel-tiny"
PROMPT: str = "12+3="
# "12+3=" in the arithmetic tokenizer's ids: "0123456789+-=" is ids 0..12, EOS is 13
PROMPT_IDS: list[int] = [1, 2, 10, 3, 12]
EOS: int = 13
ALPHABET: str = "0123456789+-="
N: int = 4
MAX_TOKENS: int = 4
SEED: int = 1234


@pytest.fixture(scope="module")
def client() -> OpenAI:
    base = os.environ["RAVEL_SERVE_URL"].rstrip("/")
    # no retries: a failed request must fail the test, not be hidden behind a second try
    return OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=60.0)


def check_choices(completion: Completion, n: int) -> None:
    assert completion.object == "text_completion"
    assert completion.model == MODEL
    assert sorted(c.index for c in completion.choices) == list(range(n))
    for choice in completion.choices:
        assert choice.finish_reason in ("stop", "length")
        assert set(choice.text) <= set(ALPHABET), choice.text


def test_completion_textPromptWithNAndLogprobs(client: OpenAI) -> None:
    completion = client.completions.create(
        model=MODEL, prompt=PROMPT, n=N, logprobs=1, max_tokens=MAX_TOKENS, seed=SEED, temperature=1.0)
    check_choices(completion, N)
    assert completion.usage is not None
    # one prompt, counted once (as vLLM counts it), whatever n is
    assert completion.usage.prompt_tokens == len(PROMPT)
    generated = 0
    for choice in completion.choices:
        lp = choice.logprobs
        assert lp is not None
        assert lp.tokens is not None and lp.token_logprobs is not None
        assert 1 <= len(lp.tokens) <= MAX_TOKENS
        assert len(lp.token_logprobs) == len(lp.tokens)
        assert all(x is not None and x <= 0.0 for x in lp.token_logprobs)
        assert lp.top_logprobs is not None and len(lp.top_logprobs) == len(lp.tokens)
        # the decoded tokens spell the text (EOS decodes to nothing)
        assert "".join(lp.tokens) == choice.text
        if choice.finish_reason == "length":
            assert len(lp.tokens) == MAX_TOKENS
        generated += len(lp.tokens)
    assert completion.usage.completion_tokens == generated
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens


def test_completion_sameSeedGivesSameChoices(client: OpenAI) -> None:
    first = client.completions.create(model=MODEL, prompt=PROMPT, n=N, max_tokens=MAX_TOKENS, seed=SEED)
    second = client.completions.create(model=MODEL, prompt=PROMPT, n=N, max_tokens=MAX_TOKENS, seed=SEED)
    assert [c.text for c in sorted(first.choices, key=lambda c: c.index)] == \
        [c.text for c in sorted(second.choices, key=lambda c: c.index)]


def test_completion_tokenIdPromptReturnsTokenIds(client: OpenAI) -> None:
    completion = client.completions.create(
        model=MODEL, prompt=PROMPT_IDS, n=N, logprobs=1, max_tokens=MAX_TOKENS, seed=SEED,
        extra_body={"return_tokens_as_token_ids": True})
    check_choices(completion, N)
    for choice in completion.choices:
        lp = choice.logprobs
        assert lp is not None and lp.tokens is not None and lp.token_logprobs is not None
        assert 1 <= len(lp.tokens) <= MAX_TOKENS
        ids: list[int] = []
        for token in lp.tokens:
            m = re.fullmatch(r"token_id:(\d+)", token)
            assert m is not None, token
            ids.append(int(m.group(1)))
        assert all(0 <= i <= EOS for i in ids)
        # one log-prob per token
        assert len(lp.token_logprobs) == len(ids)
        assert all(x is not None and x <= 0.0 for x in lp.token_logprobs)
        # EOS only as the last token, and then the choice stopped
        assert EOS not in ids[:-1]
        if ids[-1] == EOS:
            assert choice.finish_reason == "stop"
        # the text is the decoded ids
        assert choice.text == "".join(ALPHABET[i] for i in ids if i != EOS)


def test_completion_tokenIdPromptMatchesTextPrompt(client: OpenAI) -> None:
    by_text = client.completions.create(model=MODEL, prompt=PROMPT, n=N, max_tokens=MAX_TOKENS, seed=SEED)
    by_ids = client.completions.create(model=MODEL, prompt=PROMPT_IDS, n=N, max_tokens=MAX_TOKENS, seed=SEED)
    assert [c.text for c in sorted(by_text.choices, key=lambda c: c.index)] == \
        [c.text for c in sorted(by_ids.choices, key=lambda c: c.index)]


def test_chat_completionAnswersAsAssistant(client: OpenAI) -> None:
    chat: ChatCompletion = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": PROMPT}], n=2, max_tokens=MAX_TOKENS, seed=SEED,
        logprobs=True)
    assert chat.object == "chat.completion"
    assert sorted(c.index for c in chat.choices) == [0, 1]
    for choice in chat.choices:
        assert choice.message.role == "assistant"
        assert choice.message.content is not None
        assert set(choice.message.content) <= set(ALPHABET)
        assert choice.finish_reason in ("stop", "length")
    assert chat.usage is not None and chat.usage.completion_tokens >= 2


def test_completion_streamGivesEveryChoiceAndTheSameText(client: OpenAI) -> None:
    stream = client.completions.create(
        model=MODEL, prompt=PROMPT, n=N, max_tokens=MAX_TOKENS, seed=SEED, stream=True)
    texts: dict[int, str] = {}
    finish: dict[int, str | None] = {}
    chunks = 0
    for chunk in stream:
        chunks += 1
        assert chunk.object == "text_completion"
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + choice.text
            if choice.finish_reason is not None:
                finish[choice.index] = choice.finish_reason
    assert chunks >= 1
    assert sorted(texts) == list(range(N))
    assert sorted(finish) == list(range(N))
    # the stream's text is what the same request gives without streaming
    whole = client.completions.create(model=MODEL, prompt=PROMPT, n=N, max_tokens=MAX_TOKENS, seed=SEED)
    assert [texts[i] for i in range(N)] == [c.text for c in sorted(whole.choices, key=lambda c: c.index)]


def test_completion_withTraceparentHeader(client: OpenAI) -> None:
    assert re.fullmatch(r"[0-9a-f]{32}", TRACE_ID) and re.fullmatch(r"[0-9a-f]{16}", PARENT_ID)
    completion = client.completions.create(
        model=MODEL, prompt=PROMPT, n=N, max_tokens=MAX_TOKENS, seed=SEED,
        extra_headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01", "X-Request-Id": TRACED_REQUEST_ID})
    check_choices(completion, N)
    assert completion.id == f"cmpl-{TRACED_REQUEST_ID}"  # vLLM names the response so; the engine ids stay


def test_completion_withoutTraceparentHeader(client: OpenAI) -> None:
    completion = client.completions.create(
        model=MODEL, prompt=PROMPT, n=2, max_tokens=MAX_TOKENS, seed=SEED,
        extra_headers={"X-Request-Id": ROOT_REQUEST_ID})
    check_choices(completion, 2)
    assert completion.id == f"cmpl-{ROOT_REQUEST_ID}"


def test_completion_maxTokensZeroIsBadRequest(client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=0)
    assert e.value.status_code == 400
    assert "max_tokens" in e.value.message


def test_models_listsTheServedModel(client: OpenAI) -> None:
    ids = [m.id for m in client.models.list()]
    assert MODEL in ids
