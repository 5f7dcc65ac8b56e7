#!/usr/bin/env python3
"""Greedy generation with a KV cache through one Kiln artifact (docs/symbolic-shapes.md).

The artifact is llama_decoder_kv compiled once with symbolic dims (no --input-shape):

    build/bin/kiln compile ../shared/models/llama_decoder_kv/model.onnx -o /tmp/llama.kiln
    PYTHONPATH=client/python /usr/bin/python3 examples/decode/decode.py /tmp/llama.kiln \\
        --greedy ../shared/models/llama_decoder_kv/greedy.txt

The first step feeds the whole prompt with an empty cache (past = 0); each later step feeds the
token just chosen with the previous step's present_* as past_*. With --greedy the prompt and
the expected tokens come from that file ("prompt ..." and "tokens ..." lines) and the run fails
unless the generated tokens equal them. Prints the tokens, the prompt's latency and the decode
rate in tokens per second.
"""
import argparse
import sys
import time

import numpy as np

import kiln


def read_greedy(path):
    """The prompt and expected tokens of a greedy.txt file."""
    fields = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts:
                fields[parts[0]] = [int(t) for t in parts[1:]]
    return fields["prompt"], fields.get("tokens", [])


def generate(model, prompt, steps, threads_note=""):
    """Greedy decoding: returns the generated tokens, the prompt step's seconds and the
    decode steps' seconds (all but the prompt step)."""
    past_names = [i.name for i in model.inputs if i.name.startswith("past_")]
    # An empty cache: each past_* with its past dim 0 (the other dims from the model).
    caches = {}
    for info in model.inputs:
        if info.name in past_names:
            shape = tuple(0 if d == -1 else d for d in info.shape)
            caches[info.name] = np.zeros(shape, dtype=info.dtype)
    ids = np.array([prompt], dtype=np.int64)
    tokens = []
    prompt_s = 0.0
    decode_s = 0.0
    for step in range(steps):
        feeds = {"input_ids": ids}
        feeds.update(caches)
        start = time.perf_counter()
        outputs = model.run(feeds)
        elapsed = time.perf_counter() - start
        if step == 0:
            prompt_s = elapsed
        else:
            decode_s += elapsed
        token = int(np.argmax(outputs["logits"][0, -1]))
        tokens.append(token)
        for name in past_names:
            caches[name] = outputs["present_" + name[len("past_"):]]
        ids = np.array([[token]], dtype=np.int64)
    return tokens, prompt_s, decode_s


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("artifact", help="llama_decoder_kv compiled with no --input-shape")
    parser.add_argument("--greedy", help="a greedy.txt: its prompt, and the tokens to expect")
    parser.add_argument("--prompt", help="comma-separated token ids (without --greedy)")
    parser.add_argument("--tokens", type=int, default=32, help="tokens to generate (32)")
    parser.add_argument("--threads", type=int, default=0, help="runtime threads (0: all cores)")
    args = parser.parse_args()
    expected = []
    if args.greedy:
        prompt, expected = read_greedy(args.greedy)
    elif args.prompt:
        prompt = [int(t) for t in args.prompt.split(",")]
    else:
        parser.error("give --greedy FILE or --prompt IDS")
    steps = len(expected) if expected else args.tokens
    model = kiln.load(args.artifact, num_threads=args.threads)
    tokens, prompt_s, decode_s = generate(model, prompt, steps)
    print("prompt", " ".join(map(str, prompt)))
    print("tokens", " ".join(map(str, tokens)))
    decode_steps = max(steps - 1, 1)
    print(f"prompt of {len(prompt)} tokens: {prompt_s * 1e3:.3f} ms; "
          f"decode: {decode_steps / decode_s if decode_s > 0 else 0:.1f} tokens/s "
          f"({decode_s * 1e3 / decode_steps:.3f} ms per token), one artifact for every length")
    if expected and tokens != expected:
        first = next(i for i, (a, b) in enumerate(zip(tokens, expected)) if a != b)
        print(f"MISMATCH at token {first}: got {tokens[first]}, expected {expected[first]}",
              file=sys.stderr)
        return 1
    if expected:
        print(f"MATCH: the {len(expected)} tokens of {args.greedy}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
