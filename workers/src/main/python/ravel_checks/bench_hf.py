"""``python -m ravel_checks.bench_hf``: the Python workers against bare transformers and PyTorch, in one process.

Issue 26's benchmark (docs/benchmarks.md). Both sides run in this process, on the same device, with the same
``torch.set_num_threads``, the same Hugging Face checkpoint (``--model``; by default the test fixture of
``tests/hf_fixture.py``, a WordLevel tokenizer and a random Qwen2, built into a temporary folder at the width
``--hidden``/``--layers``/``--heads``) and the same inputs. No Ray: the actor classes are used directly, through
the wire methods the Java driver calls (``method(carrier, json_args) -> bytes``), as a run uses them:

* the Ravel side's clock includes encoding the call's arguments (the requests, or the batch, as JSON: in a run the
  Java driver encodes them), the call itself (decoding the arguments, the work, encoding the answer) and decoding
  the answer (the results' binary form, or the outcome's JSON: in a run the driver decodes it); Ray's transport of
  the bytes is not in it (``bench-calls`` measures an actor call);
* telemetry is as a run has it (``--telemetry run``, the default): Ravel's worker environment with the preset
  ``per_step``, spans written to a file under a temporary runs folder (the ``file`` exporter, as
  ``examples/grpo-hf.yaml``), engine spans off, and a carrier holding a sampled trace context, as the driver's
  step span sends it, so every call opens its worker span (``rl.worker.generate``, ``rl.trainer.train``);
  ``--telemetry off`` runs with ``ProcessTelemetry.disabled`` (no spans), the Python side alone;
* the baseline's clock includes its own work only: ``model.generate`` and the log-probs (tokens and log-probs as
  tensors), or the training step on tensors made from the batch inside the clock; no telemetry.

Generation: ``--prompts`` arithmetic prompts ``"a+b="`` x ``--group-size`` samples, temperature 1, top-p 1,
exactly ``--max-new-tokens`` new tokens each (``ignore_eos`` on the worker; no EOS token on the baseline), through

* ``GenerationWorkerImpl.generate`` (the transformers engine: one batch, a prefill then one decode step per token
  through the KV cache, per-request seeded sampling, behaviour log-probs), against
* ``model.generate`` of the same checkpoint (``do_sample=True``, batched, ``output_logits=True``), with the
  generated tokens' log-probs computed from its logits (``log_softmax`` over the vocabulary, gathered), as the
  worker returns them.

Training: one batch of the worker's completions (real tokens and behaviour log-probs; rewards alternating 0/1
within each group so that every group has advantages) through

* ``PolicyTrainerImpl.train`` (one GRPO step with the contract's defaults, ``kl_beta`` 0.04 included, so a
  reference forward pass, ``learning_rate`` ``--lr``), against
* a plain PyTorch loop over the same batch: the tokens as tensors, group-normalised advantages, a no-grad
  reference forward, the policy forward, token log-probs, the clipped surrogate less ``kl_beta`` x the k3 KL,
  averaged per sequence then over the batch, backward, gradient clipping to 1.0 and an AdamW step.

Each side has its own model and optimizer, stepping once per round. After one unrecorded warm-up of each, the
rounds alternate their order (A, B then B, A). tokens/s is generated (trained) completion tokens / wall seconds;
a round's ratio is Ravel's tokens/s over the baseline's, and the report gives their median, every round's figures
and the ratio of each side's fastest round (noise only ever adds time). Timings of a shared machine are noisy: the
ratios of one invocation are what to read, not the seconds.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import torch

from ravel_workers import hf
from ravel_workers.telemetry import ProcessTelemetry
from ravel_workers.wire import results as result_wire

#: The carrier of a call with no trace context, as the Java driver sends one with telemetry off.
CARRIER = json.dumps({"traceparent": "", "tracestate": "", "baggage": ""})
#: The carrier of a call under a sampled step span, as the Java driver sends one with telemetry on.
TRACED_CARRIER = json.dumps({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                             "tracestate": "", "baggage": ""})
#: ``--telemetry``: as a run has it (``per_step``, file exporter), or off.
TELEMETRY = ("run", "off")
#: tests/hf_fixture.py, beside this package in the source tree.
FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "hf_fixture.py"

T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    """The workload (``--help`` says what each is)."""

    model: str = ""
    hidden: int = 256
    layers: int = 4
    heads: int = 4
    prompts: int = 32
    group_size: int = 8
    max_new_tokens: int = 32
    rounds: int = 5
    threads: int = 2
    device: str = "cpu"
    lr: float = 1e-3
    seed: int = 7
    telemetry: str = "run"


@dataclass(frozen=True)
class Timed:
    """One measured call: its wall seconds and the completion tokens it generated or trained."""

    seconds: float
    tokens: int

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


# ---------------------------------------------------------------------------------------------- inputs


def build_fixture(folder: Path, hidden: int, layers: int, heads: int) -> str:
    """The test fixture's checkpoint (tests/hf_fixture.py) at this width, written to ``folder``; its path."""
    spec = importlib.util.spec_from_file_location("ravel_hf_fixture", FIXTURE)
    if spec is None or spec.loader is None or not FIXTURE.is_file():
        raise FileNotFoundError(f"no {FIXTURE}: give --model DIR (a Hugging Face checkpoint folder)")
    fixture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixture)
    folder.mkdir(parents=True, exist_ok=True)
    fixture.make_model(folder, fixture.make_tokenizer(folder), hidden=hidden, layers=layers, heads=heads)
    return str(folder)


def prompt_ids(tokenizer: Any, n: int) -> list[list[int]]:
    """``n`` prompts ``"a+b="`` (a, b in 0..4, in turn) as token ids; they must all have one length, so that the
    baseline needs no padding (the worker batches equal lengths together)."""
    texts = [f"{i // 5 % 5}+{i % 5}=" for i in range(n)]
    ids = [list(tokenizer(t, add_special_tokens=False).input_ids) for t in texts]
    if len({len(p) for p in ids}) != 1:
        raise ValueError("the prompts 'a+b=' tokenize to different lengths with this tokenizer; "
                         "the benchmark needs equal lengths (no padding on either side)")
    return ids


def model_config(path: str, dtype: str) -> dict[str, Any]:
    """The ``model`` part of the worker and trainer specs for a checkpoint folder (sizes read from its config)."""
    from transformers import AutoConfig

    c = AutoConfig.from_pretrained(path, local_files_only=True)

    def size(qwen: str, gpt2: str, default: int) -> int:
        value = getattr(c, qwen, None) or getattr(c, gpt2, None)
        return int(value) if value else default

    return {"family": "gpt2" if c.model_type == "gpt2" else "qwen2", "vocab_size": int(c.vocab_size),
            "layers": size("num_hidden_layers", "n_layer", 1), "hidden": size("hidden_size", "n_embd", 1),
            "heads": size("num_attention_heads", "n_head", 1),
            "max_positions": size("max_position_embeddings", "n_positions", 2048), "path": path, "dtype": dtype}


def requests(prompts: list[list[int]], group_size: int, max_new_tokens: int, seed: int) -> list[dict[str, Any]]:
    """The wire form of one step's requests: each prompt ``group_size`` times, a distinct seed per request."""
    return [{"request_id": f"p{i}-g{j}", "prompt_tokens": p,
             "params": {"max_tokens": max_new_tokens, "temperature": 1.0, "top_p": 1.0,
                        "seed": seed * 1_000_003 + i * group_size + j, "ignore_eos": True}}
            for i, p in enumerate(prompts) for j in range(group_size)]


def trajectories(results: list[dict[str, Any]], group_size: int) -> list[dict[str, Any]]:
    """The wire form of a training batch from generation results: rewards alternate 0/1 within each group."""
    return [{"request_id": r["request_id"], "prompt": r["prompt_tokens"], "completion": r["completion_tokens"],
             "logprobs": r["logprobs"], "reward": float(k % 2), "weight_version": r["weight_version"],
             "group_index": k // group_size} for k, r in enumerate(results)]


# ---------------------------------------------------------------------------------------------- baselines


class PlainGenerate:
    """``model.generate`` on the checkpoint, sampling exactly ``max_new_tokens`` tokens, with their log-probs."""

    def __init__(self, path: str, device: torch.device, prompts: list[list[int]], group_size: int,
                 max_new_tokens: int, pad_token: int) -> None:
        from transformers import GenerationConfig

        self.model = hf.load_model(path, device, "float32")
        self.ids = torch.tensor([p for p in prompts for _ in range(group_size)], dtype=torch.long, device=device)
        self.prompt_len = self.ids.shape[1]
        # no EOS: every row generates max_new_tokens tokens, as the worker's with ignore_eos; plain sampling
        self.config = GenerationConfig(  # type: ignore[no-untyped-call]  # transformers leaves it unannotated
            do_sample=True, max_new_tokens=max_new_tokens, eos_token_id=None, pad_token_id=pad_token,
            temperature=1.0, top_k=None, top_p=None, output_logits=True, return_dict_in_generate=True)

    def __call__(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The generated tokens ``[B, T]`` and their log-probs ``[B, T]``."""
        torch.manual_seed(seed)
        with torch.inference_mode():
            out = self.model.generate(self.ids, attention_mask=torch.ones_like(self.ids),  # type: ignore[operator]
                                      generation_config=self.config)
            tokens = out.sequences[:, self.prompt_len:]
            logits = torch.stack(out.logits, dim=1).float()
            logprobs = torch.gather(torch.log_softmax(logits, dim=-1), 2, tokens.unsqueeze(-1)).squeeze(-1)
        return tokens, logprobs


class PlainTrainer:
    """A plain PyTorch GRPO step on the checkpoint: its own policy, frozen reference and AdamW (module docstring)."""

    def __init__(self, path: str, device: torch.device, lr: float, kl_beta: float, clip: float,
                 max_grad_norm: float) -> None:
        self.device = device
        self.model = hf.load_model(path, device, "float32")
        self.reference = hf.load_model(path, device, "float32")
        self.reference.requires_grad_(False)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr, betas=(0.9, 0.99), eps=1e-8,
                                           weight_decay=0.0)
        self.kl_beta, self.clip, self.max_grad_norm = kl_beta, clip, max_grad_norm

    def step(self, batch: list[dict[str, Any]], group_size: int) -> float:
        """One update on the batch (all sequences of one length, so no padding); returns the loss."""
        dev = self.device
        ids = torch.tensor([t["prompt"] + t["completion"] for t in batch], dtype=torch.long, device=dev)
        start = len(batch[0]["prompt"]) - 1  # the logits at position start + j predict completion token j
        tokens = ids[:, start + 1:]
        behaviour = torch.tensor([t["logprobs"] for t in batch], dtype=torch.float32, device=dev)
        rewards = torch.tensor([t["reward"] for t in batch], dtype=torch.float32, device=dev).view(-1, group_size)
        adv = ((rewards - rewards.mean(dim=1, keepdim=True)) / (rewards.std(dim=1, unbiased=False, keepdim=True)
                                                                 + 1e-6)).view(-1, 1)

        def logprobs(model: torch.nn.Module) -> torch.Tensor:
            logits = model(input_ids=ids, use_cache=False).logits[:, start:-1]
            return torch.gather(torch.log_softmax(logits.float(), dim=-1), 2, tokens.unsqueeze(-1)).squeeze(-1)

        self.model.train()
        with torch.no_grad():
            ref = logprobs(self.reference)
        logp = logprobs(self.model)
        ratio = torch.exp(logp - behaviour)
        surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - self.clip, 1 + self.clip) * adv)
        delta = ref - logp
        kl = torch.exp(delta) - delta - 1
        loss = -(surrogate - self.kl_beta * kl).mean(dim=1).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]  # torch's backward is unannotated
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        self.optimizer.step()
        self.model.eval()
        return float(loss.item())


# ---------------------------------------------------------------------------------------------- measuring


def wire(method: Any) -> Callable[[str, str], bytes]:
    """A role method as Java calls it: ``(carrier, json_args) -> bytes`` (its annotation is the typed method's)."""
    return cast(Callable[[str, str], bytes], method)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(device: torch.device, fn: Callable[[], T]) -> tuple[float, T]:
    """``fn``'s wall seconds (the device synchronised before and after) and its result."""
    _sync(device)
    t0 = time.perf_counter()
    value = fn()
    _sync(device)
    return time.perf_counter() - t0, value


def _rounds(rounds: int, ravel: Callable[[int], Timed], plain: Callable[[int], Timed]) -> dict[str, Any]:
    """One unrecorded warm-up of each, then ``rounds`` rounds in alternating order; per round and the median."""
    ravel(-1)
    plain(-1)
    rows = []
    for r in range(rounds):
        if r % 2 == 0:
            a, b = ravel(r), plain(r)
        else:
            b = plain(r)
            a = ravel(r)
        rows.append({"ravel_s": round(a.seconds, 4), "ravel_tokens": a.tokens,
                     "ravel_tokens_per_s": round(a.tokens_per_s, 1), "plain_s": round(b.seconds, 4),
                     "plain_tokens": b.tokens, "plain_tokens_per_s": round(b.tokens_per_s, 1),
                     "ratio": round(a.tokens_per_s / b.tokens_per_s, 4) if b.tokens_per_s > 0 else 0.0})
    ratios = [row["ratio"] for row in rows]
    best_ravel = max(row["ravel_tokens_per_s"] for row in rows)
    best_plain = max(row["plain_tokens_per_s"] for row in rows)
    return {"ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
            # each side's fastest round: a machine's noise only ever adds time
            "ratio_of_best": round(best_ravel / best_plain, 4) if best_plain > 0 else 0.0,
            "ravel_tokens_per_s_median": statistics.median(row["ravel_tokens_per_s"] for row in rows),
            "plain_tokens_per_s_median": statistics.median(row["plain_tokens_per_s"] for row in rows),
            "rounds": rows}


def telemetry_of(mode: str, role: str, runs_dir: Path) -> ProcessTelemetry:
    """The Ravel side's telemetry under ``--telemetry``: a run's (module docstring), or off."""
    if mode == "off":
        return ProcessTelemetry.disabled(role)
    if mode != "run":
        raise ValueError(f"--telemetry: expected one of {', '.join(TELEMETRY)}, got {mode!r}")
    return ProcessTelemetry.from_env(role, {"RAVEL_TELEMETRY_RUN_ID": "bench-hf", "RAVEL_TELEMETRY_ENABLED": "true",
                                            "RAVEL_TELEMETRY_PRESET": "per_step", "RAVEL_TELEMETRY_EXPORTER": "file",
                                            "RAVEL_TELEMETRY_ENGINE_TRACING": "false",
                                            "RAVEL_TELEMETRY_RUNS_DIR": str(runs_dir)})


def run(s: Settings) -> dict[str, Any]:
    """Both benchmarks under ``s``; the report (module docstring)."""
    import transformers

    from ravel_workers.actors import GenerationWorkerImpl, PolicyTrainerImpl
    from ravel_workers.wire import GrpoSettings

    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    torch.set_num_threads(s.threads)
    device = torch.device(s.device)
    with tempfile.TemporaryDirectory(prefix="ravel-bench-hf-") as tmp:
        path = s.model or build_fixture(Path(tmp) / "model", s.hidden, s.layers, s.heads)
        tokenizer = hf.load_tokenizer(path)
        model = model_config(path, "float32")
        prompts = prompt_ids(tokenizer, s.prompts)
        n = s.prompts * s.group_size
        runs_dir = Path(tmp) / "runs"
        worker_telemetry = telemetry_of(s.telemetry, "generation_worker", runs_dir)
        trainer_telemetry = telemetry_of(s.telemetry, "policy_trainer", runs_dir)
        carrier = CARRIER if s.telemetry == "off" else TRACED_CARRIER
        worker = GenerationWorkerImpl(
            {"model": model, "seed": s.seed, "eos_token": int(tokenizer.eos_token_id), "model_name": "bench",
             "engine": "transformers", "max_running_requests": n, "device": s.device}, telemetry=worker_telemetry)
        grpo = GrpoSettings(group_size=s.group_size, learning_rate=s.lr, max_new_tokens=s.max_new_tokens)
        trainer = PolicyTrainerImpl({"model": model, "seed": s.seed, "device": s.device, "grpo": grpo.to_wire()},
                                    telemetry=trainer_telemetry)
        plain_generate = PlainGenerate(path, device, prompts, s.group_size, s.max_new_tokens,
                                       int(tokenizer.pad_token_id))
        plain_trainer = PlainTrainer(path, device, s.lr, grpo.kl_beta, grpo.clip_epsilon_low, grpo.max_grad_norm)
        params = sum(p.numel() for p in plain_trainer.model.parameters())
        generate, train = wire(worker.generate), wire(trainer.train)
        try:
            last: list[dict[str, Any]] = []

            def worker_call(r: int) -> list[dict[str, Any]]:
                args = json.dumps([requests(prompts, s.group_size, s.max_new_tokens, s.seed + 1000 + r)])
                raw = generate(carrier, args)
                # a generate call's answer is its results' binary form (what Java reads), as their JSON dicts here
                return ([x.to_wire() for x in result_wire.decode_results(raw)]
                        if raw.startswith(result_wire.MAGIC) else cast(list[dict[str, Any]], json.loads(raw)))

            def worker_round(r: int) -> Timed:
                seconds, results = _timed(device, lambda: worker_call(r))
                errors = [x["error"] for x in results if x["finish_reason"] == "error"]
                if errors:
                    raise RuntimeError(f"the worker failed {len(errors)} request(s): {errors[0]}")
                last[:] = results
                return Timed(seconds, sum(len(x["completion_tokens"]) for x in results))

            def generate_round(r: int) -> Timed:
                seconds, (tokens, _) = _timed(device, lambda: plain_generate(s.seed + 1000 + r))
                return Timed(seconds, int(tokens.numel()))

            generation = _rounds(s.rounds, worker_round, generate_round)
            batch = trajectories(last, s.group_size)

            def trainer_round(_: int) -> Timed:
                seconds, outcome = _timed(device, lambda: json.loads(train(carrier, json.dumps([batch]))))
                return Timed(seconds, int(outcome["tokens"]))

            def plain_round(_: int) -> Timed:
                seconds, _loss = _timed(device, lambda: plain_trainer.step(batch, s.group_size))
                return Timed(seconds, sum(len(t["completion"]) for t in batch))

            training = _rounds(s.rounds, trainer_round, plain_round)
        finally:
            worker.close()
            spans = 0
            for t in (worker_telemetry, trainer_telemetry):
                t.shutdown()
                spans += t.stats().exported
    return {
        "generation": generation, "training": training,
        "settings": {**asdict(s), "model": s.model or f"tests/hf_fixture.py (hidden {s.hidden}, layers {s.layers},"
                                                      f" heads {s.heads})",
                     "vocab_size": model["vocab_size"], "parameters": params, "prompt_tokens": len(prompts[0]),
                     "completions": n, "kl_beta": grpo.kl_beta,
                     "telemetry": ("as a run: per_step, file exporter, engine spans off" if s.telemetry == "run"
                                   else "disabled (no spans)"),
                     "spans_exported": spans,
                     "ravel_clock": "arguments encoded, the wire call, the answer decoded",
                     "baseline_logprobs": "output_logits=True, log_softmax gathered at the sampled tokens"},
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__},
        "threads": torch.get_num_threads(),
        "targets": {"generation": 0.9, "training": 0.9},
    }


def main(argv: list[str] | None = None) -> int:
    d = Settings()
    p = argparse.ArgumentParser(prog="python -m ravel_checks.bench_hf", description=__doc__.splitlines()[0])
    p.add_argument("--model", default="", help="a Hugging Face checkpoint folder (default: tests/hf_fixture.py's"
                   " checkpoint, built into a temporary folder at --hidden/--layers/--heads)")
    p.add_argument("--hidden", type=int, default=d.hidden, help=f"the built fixture's width (default {d.hidden})")
    p.add_argument("--layers", type=int, default=d.layers, help=f"the built fixture's layers (default {d.layers})")
    p.add_argument("--heads", type=int, default=d.heads, help=f"the built fixture's heads (default {d.heads})")
    p.add_argument("--prompts", type=int, default=d.prompts, help=f"prompts per batch (default {d.prompts})")
    p.add_argument("--group-size", type=int, default=d.group_size, help=f"samples per prompt (default {d.group_size})")
    p.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens,
                   help=f"tokens generated per completion, all of them (default {d.max_new_tokens})")
    p.add_argument("--rounds", type=int, default=d.rounds, help=f"measured rounds of each side (default {d.rounds})")
    p.add_argument("--threads", type=int, default=d.threads, help=f"torch.set_num_threads (default {d.threads})")
    p.add_argument("--device", default=d.device, help=f"cpu or cuda (default {d.device})")
    p.add_argument("--lr", type=float, default=d.lr, help=f"the learning rate of both trainers (default {d.lr})")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--telemetry", choices=TELEMETRY, default=d.telemetry,
                   help="the Ravel side's telemetry: as a run has it (per_step, spans to a file) or off (default run)")
    p.add_argument("--json", default="", help="also write the report to this file")
    a = p.parse_args(argv)
    if a.rounds < 1 or a.prompts < 1 or a.group_size < 2 or a.max_new_tokens < 1:
        p.error("--rounds, --prompts and --max-new-tokens must be >= 1, --group-size >= 2")
    settings = Settings(model=a.model, hidden=a.hidden, layers=a.layers, heads=a.heads, prompts=a.prompts,
                        group_size=a.group_size, max_new_tokens=a.max_new_tokens, rounds=a.rounds,
                        threads=a.threads, device=a.device, lr=a.lr, seed=a.seed, telemetry=a.telemetry)
    report = run(settings)
    text = json.dumps(report, indent=2)
    if a.json:
        Path(a.json).write_text(text + "\n", encoding="utf-8")
    print(text)
    for name in ("generation", "training"):
        r = report[name]
        print(f"{name}: Ravel / plain tokens/s = {r['ratio_median']:.3f} (median of {len(r['rounds'])}; "
              f"{r['ratio_min']:.3f}-{r['ratio_max']:.3f}; best against best {r['ratio_of_best']:.3f}), target >= 0.9",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
