"""Your reward function: found by name, called with the batch, its result checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from ravel_workers import rewards


def _module(tmp_path: Path, name: str, body: str) -> str:
    folder = tmp_path / "code"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(body, encoding="utf-8")
    return str(folder)


def _call(fn: rewards.RewardFunction, completions: list[str], answers: list[str]) -> rewards.Scores:
    return fn(["p"] * len(completions), completions, answers, [{"k": i} for i in range(len(completions))], 3)


def test_built_ins_score_exact_and_math_answers() -> None:
    exact = rewards.RewardFunction("exact_match")
    assert _call(exact, [" 7\n", "8", "7 "], ["7", "7", "7"]).rewards == [1.0, 0.0, 1.0]
    math = rewards.RewardFunction("math")
    got = _call(math, ["so it is 7", "\\boxed{7}", "seven", "it is 7, no 8"], ["7", "7", "7", "7"]).rewards
    assert got == [1.0, 1.0, 0.0, 0.0]


def test_a_function_of_your_own_gets_only_the_arguments_it_names(tmp_path: Path) -> None:
    code = _module(tmp_path, "my_rewards", (
        "def length(completions, step):\n"
        "    return [len(c) + step for c in completions]\n"
        "def parts(completions, answers, metadata, **kw):\n"
        "    return {'exact': [float(c == a) for c, a in zip(completions, answers)],\n"
        "            'meta': [m['k'] * 0.5 for m in metadata]}\n"))
    fn = rewards.RewardFunction("my_rewards:length", [code])
    assert fn.arguments == ("completions", "step")
    assert _call(fn, ["ab", "abc"], ["", ""]).rewards == [5.0, 6.0]
    scores = _call(rewards.RewardFunction("my_rewards:parts", [code]), ["1", "2"], ["1", "1"])
    assert scores.rewards == [1.0, 0.5] and scores.components == {"exact": [1.0, 0.0], "meta": [0.0, 0.5]}


@pytest.mark.parametrize(("body", "message"), [
    ("def f(completions):\n    return [1.0]\n", "its result has 1 values for 2 completions"),
    ("def f(completions):\n    return [1.0, 'x']\n", "its result[1] is 'x', not a finite number"),
    ("def f(completions):\n    return [1.0, float('nan')]\n", "its result[1] is nan, not a finite number"),
    ("def f(completions):\n    return 3\n", "its result is a int, not a list of 2 numbers"),
    ("def f(completions):\n    raise KeyError('answer')\n", "raised KeyError: 'answer'"),
    ("def f(completions):\n    return None\n", "its result is a NoneType, not a list of 2 numbers"),
])
def test_a_bad_result_or_a_raise_names_the_function(tmp_path: Path, body: str, message: str) -> None:
    module = "bad_rewards_" + "".join(c for c in tmp_path.name if c.isalnum())  # a fresh module per case
    fn = rewards.RewardFunction(f"{module}:f", [_module(tmp_path, module, body)])
    with pytest.raises(rewards.RewardError) as e:
        _call(fn, ["a", "b"], ["a", "b"])
    assert str(e.value) == f"reward.function {module}:f: {message}"


def test_resolve_names_what_is_missing(tmp_path: Path) -> None:
    code = _module(tmp_path, "some_rewards", "value = 3\n")
    with pytest.raises(rewards.RewardError, match="not a built-in"):
        rewards.RewardFunction("nothing_like_it")
    with pytest.raises(rewards.RewardError, match=r"cannot import no_such_module \(ModuleNotFoundError"):
        rewards.RewardFunction("no_such_module:f", [code])
    with pytest.raises(rewards.RewardError, match="some_rewards has no 'g'"):
        rewards.RewardFunction("some_rewards:g", [code])
    with pytest.raises(rewards.RewardError, match="value is a int, not callable"):
        rewards.RewardFunction("some_rewards:value", [code])
    with pytest.raises(rewards.RewardError, match="reward.code_path: .* is not a folder"):
        rewards.RewardFunction("x:f", [str(tmp_path / "nope")])
