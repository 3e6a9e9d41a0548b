"""Build the real-engine lab's models locally: a BPE tokenizer, a tiny Llama target and a tinier draft.

Nothing is downloaded. The tokenizer is trained with `tokenizers` on this repository's own Markdown and
Python files; both models are LlamaForCausalLM configs built from scratch with `transformers` and
trained briefly on the same text (same tokenizer, same data), so the draft agrees with the target on
the easy tokens and speculative decoding has something to accept. Run it with the lab virtualenv's
python (it needs torch, transformers and tokenizers, which vLLM's CPU wheel brings):

    .venv-real-engine/bin/python bench/real_engine/build_models.py --out bench/real_engine/work/models

It writes OUT/target and OUT/draft (config.json, model.safetensors, tokenizer files) and
OUT/build_report.json (sizes, parameter counts, losses, seconds per stage).
"""

import argparse
import json
import math
import os
import random
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", ".venv", ".venv-real-engine", "node_modules", "work", "__pycache__", ".hypothesis"}

# Model shapes. head_dim 64 for both (a size vLLM's CPU attention supports); tied embeddings keep them small.
TARGET = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
              num_key_value_heads=4)
DRAFT = dict(hidden_size=128, intermediate_size=256, num_hidden_layers=1, num_attention_heads=2,
             num_key_value_heads=2)
VOCAB = 2048
MAX_POS = 1024


def corpus_files():
    out = []
    for root, dirs, files in os.walk(REPO):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".venv"))
        for name in sorted(files):
            if name.endswith((".md", ".py")):
                out.append(Path(root) / name)
    return out


def build_tokenizer(texts, out_dir):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="</s>", model_max_length=MAX_POS)
    fast.save_pretrained(out_dir)
    return fast


def train(model, stream, steps, batch, seq, lr, seed, label):
    import torch

    rng = random.Random(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.95))
    warm = max(1, steps // 20)
    losses = []
    model.train()
    t0 = time.time()
    for step in range(steps):
        cur_lr = lr * min(1.0, (step + 1) / warm) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps)))
        for g in opt.param_groups:
            g["lr"] = cur_lr
        starts = [rng.randrange(0, len(stream) - seq - 1) for _ in range(batch)]
        x = torch.stack([stream[s:s + seq] for s in starts])
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if step % 10 == 0 or step == steps - 1:
            print(f"[{label}] step {step}/{steps} loss {loss.item():.3f} ({time.time() - t0:.0f} s)", flush=True)
    model.eval()
    return losses, time.time() - t0


def make_model(shape, tok, seed):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), max_position_embeddings=MAX_POS, rms_norm_eps=1e-5,
                      tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id, rope_theta=10000.0, torch_dtype="float32", **shape)
    return LlamaForCausalLM(cfg)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "bench/real_engine/work/models"))
    ap.add_argument("--target-steps", type=int, default=60)
    ap.add_argument("--draft-steps", type=int, default=150)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    out = Path(args.out)
    report = {"seconds": {}}
    t = time.time()
    files = corpus_files()
    texts = [f.read_text(encoding="utf-8", errors="replace") for f in files]
    report["corpus"] = {"files": len(files), "chars": sum(map(len, texts)),
                        "what": "this repository's *.md and *.py files (no download)"}
    tok = build_tokenizer(texts, out / "target")
    build_tokenizer(texts, out / "draft")  # same trainer, same data: the same vocabulary (checked below)
    from transformers import AutoTokenizer
    assert AutoTokenizer.from_pretrained(out / "draft").get_vocab() == tok.get_vocab()
    ids = []
    for text in texts:
        ids.extend(tok(text)["input_ids"] + [tok.eos_token_id])
    stream = torch.tensor(ids, dtype=torch.long)
    report["corpus"]["tokens"] = len(ids)
    report["seconds"]["tokenizer"] = round(time.time() - t, 1)

    for name, shape, steps in (("target", TARGET, args.target_steps), ("draft", DRAFT, args.draft_steps)):
        model = make_model(shape, tok, args.seed)
        losses, secs = train(model, stream, steps, args.batch, args.seq, 3e-3 if name == "target" else 5e-3,
                             args.seed, name)
        model.save_pretrained(out / name, safe_serialization=True)
        nparams = sum(p.numel() for p in model.parameters())
        report[name] = {"shape": shape, "vocab_size": len(tok), "params": nparams, "steps": steps,
                        "batch": args.batch, "seq": args.seq,
                        "loss_first": round(losses[0], 3), "loss_last10_mean": round(sum(losses[-10:]) / 10, 3)}
        report["seconds"][name] = round(secs, 1)

    # How often the draft's greedy next token equals the target's on held-out-ish windows: a rough,
    # engine-free preview of the acceptance vLLM will report.
    rng = random.Random(args.seed + 1)
    from transformers import LlamaForCausalLM
    target = LlamaForCausalLM.from_pretrained(out / "target").eval()
    draft = LlamaForCausalLM.from_pretrained(out / "draft").eval()
    with torch.no_grad():
        x = torch.stack([stream[s:s + args.seq] for s in (rng.randrange(0, len(stream) - args.seq) for _ in range(16))])
        agree = (target(input_ids=x).logits.argmax(-1) == draft(input_ids=x).logits.argmax(-1)).float().mean()
    report["greedy_next_token_agreement_on_corpus"] = round(agree.item(), 3)
    (out / "build_report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
