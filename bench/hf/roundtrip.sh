#!/usr/bin/env bash
# roundtrip.sh — tinytrain -> transformers -> tinytrain on one corpus, on the
# GPU host (torch + transformers installed; no network needed):
#   1 tinytrain trains a model (--preset, --steps) and evaluates it;
#   2 `tinytrain export` writes the Hugging Face folder; hf_check.py loads it
#     with AutoModelForCausalLM / AutoTokenizer and compares its greedy
#     continuation byte for byte with `tinytrain sample --temperature 0`;
#   3 continue_in_transformers.py trains it --pt-steps more steps in PyTorch
#     (its first loss should continue from tinytrain's last) and saves it with
#     save_pretrained, with its greedy continuation;
#   4 `tinytrain train --init-from` that folder loads it (step-0 val loss) and
#     `tinytrain sample --temperature 0` from it equals transformers' greedy text.
# Prints one JSON line of figures (the files stay in OUTDIR); exit 1 if a
# comparison fails.
#   bash bench/hf/roundtrip.sh TINYTRAIN CORPUS OUTDIR [--preset small] [--steps 300] [--pt-steps 300]
#                              [--backend auto] [--prompt "The "]
set -euo pipefail
if [ $# -lt 3 ]; then sed -n '2,17p' "$0"; exit 2; fi
T=$(realpath "$1") corpus=$2 out=$3
shift 3
preset=small steps=300 pt_steps=300 backend=auto prompt="The "
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) preset=$2 ;; --steps) steps=$2 ;; --pt-steps) pt_steps=$2 ;; --backend) backend=$2 ;; --prompt) prompt=$2 ;;
    *) echo "roundtrip.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
rm -rf "$out/tt" "$out/back"

"$T" train --preset "$preset" --data "$corpus" --steps "$steps" --out "$out/tt" --backend "$backend" --sample-tokens 0 \
  --json > "$out/tt_train.jsonl"
"$T" eval --ckpt "$out/tt" --data "$corpus" --json > "$out/tt_eval.json"
ctx=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["model"]["ctx"])' "$out/tt_train.jsonl")
tokens=$((ctx - $(printf %s "$prompt" | wc -c)))
"$T" export "$out/tt" "$out/hf" --force > "$out/export.txt"
"$T" sample --ckpt "$out/tt" --temperature 0 --prompt "$prompt" --tokens "$tokens" > "$out/tt_sample.txt"
python3 "$here/hf_check.py" "$out/hf" --prompt "$prompt" --tokens "$tokens" --expect "$out/tt_sample.txt" \
  > "$out/hf_check.json" || true
python3 "$here/continue_in_transformers.py" "$out/hf" "$corpus" "$out/pt" --steps "$pt_steps" --prompt "$prompt" \
  --tokens "$tokens" --greedy-out "$out/pt_greedy.txt" > "$out/pt.jsonl"
"$T" train --init-from "$out/pt" --data "$corpus" --steps 1 --out "$out/back" --backend "$backend" --sample-tokens 0 \
  --json > "$out/back_train.jsonl"
"$T" sample --ckpt "$out/pt" --temperature 0 --prompt "$prompt" --tokens "$tokens" > "$out/back_sample.txt"

python3 - "$out" "$steps" "$pt_steps" <<'PY'
import json, sys
out, steps, pt_steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = lambda f: [json.loads(l) for l in open(f"{out}/{f}") if l.startswith("{")]
tt = lines("tt_train.jsonl")
end = [e for e in tt if e.get("event") == "end"][-1]
ev = json.load(open(f"{out}/tt_eval.json"))
hf = lines("hf_check.json")
pt = lines("pt.jsonl")
pt_end = [e for e in pt if e.get("event") == "end"][-1]
back = [e for e in lines("back_train.jsonl") if e.get("event") == "start"][0]
same = open(f"{out}/back_sample.txt", "rb").read() == open(f"{out}/pt_greedy.txt", "rb").read()
res = {"roundtrip": "hf", "model": tt[0]["model"], "backend": tt[0]["backend"],
       "tt_steps": steps, "tt_last_loss": end["loss"], "tt_val_loss": ev["val_loss"],
       "hf_load_match": bool(hf and hf[0].get("match")), "hf_decode_ok": bool(hf and hf[0].get("decode_ok")),
       "pt_steps": pt_steps, "pt_val_before": pt_end["val_before"], "pt_first_loss": pt_end["first_loss"],
       "pt_last_loss": pt_end["last_loss"], "pt_val_after": pt_end["val_after"], "pt_seconds": round(pt_end["seconds"], 2),
       "back_hash": back.get("init_hash"), "back_init_val_loss": back.get("init_val_loss"), "back_sample_match": same}
print(json.dumps(res))
sys.exit(0 if res["hf_load_match"] and res["hf_decode_ok"] and same else 1)
PY
