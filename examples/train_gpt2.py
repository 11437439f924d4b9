"""A plain GPT-2 training script, as written for a GPU, run on any device.

    python examples/train_gpt2.py --device kiln     # was: --device cuda
    python examples/train_gpt2.py --device cpu
    python examples/train_gpt2.py --device kiln --compile
    python examples/train_gpt2.py --device kiln --compile --backend inductor

Nothing in it knows about Kiln except the one import that makes the "kiln"
device exist: a transformers GPT-2 (small config, random weights), AdamW, a
DataLoader with pinned memory, dropout, gradient clipping, and a checkpoint
saved and loaded halfway. It prints one loss per step (and, with --losses
FILE, writes them as JSON, which the tests compare across devices).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def build_model(dropout: float) -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                        bos_token_id=255, eos_token_id=255,
                        resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout,
                        use_cache=False, attn_implementation="sdpa")
    torch.manual_seed(0)
    return GPT2LMHeadModel(config)


def batches(steps: int, batch: int, seq: int) -> DataLoader:
    tokens = torch.randint(0, 256, (steps * batch, seq), generator=torch.Generator().manual_seed(1))
    return DataLoader(TensorDataset(tokens), batch_size=batch, shuffle=False,
                      pin_memory=torch.accelerator.is_available())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="kiln")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--backend", default="kiln", help="torch.compile's backend (default: kiln)")
    parser.add_argument("--losses", help="write the losses to this JSON file")
    args = parser.parse_args()

    if args.device.startswith("kiln"):
        import kiln.device  # noqa: F401  (the one line: registers torch.device("kiln"))
    device = torch.device(args.device)

    model = build_model(args.dropout).to(device)
    step_fn = torch.compile(model, backend=args.backend) if args.compile else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    checkpoint = os.path.join(tempfile.mkdtemp(), "checkpoint.pt")

    losses = []
    start = time.perf_counter()
    for step, (tokens,) in enumerate(batches(args.steps, args.batch, args.seq)):
        tokens = tokens.to(device, non_blocking=True)
        logits = step_fn(input_ids=tokens).logits
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step:3d}  loss {losses[-1]:.4f}")
        if step == args.steps // 2:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, checkpoint)
            state = torch.load(checkpoint, map_location=device)
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
    seconds = time.perf_counter() - start
    print(f"{args.steps} steps on {device} in {seconds:.2f} s ({1000 * seconds / args.steps:.1f} ms/step)")
    if args.losses:
        with open(args.losses, "w") as f:
            json.dump(losses, f)


if __name__ == "__main__":
    main()
