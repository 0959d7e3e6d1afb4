#!/usr/bin/env bash
# curve.sh — the whole speed curve in one command: presets x backends, each
# cell one `tinytrain bench` run (same weights, same text batches, 50 steps
# from init, warm-up excluded), plus the PyTorch reference for context; then
# report.md and speedup.svg (bench/report.mjs). Methodology and the
# JSON-lines format: docs/BENCHMARKS.md.
#
#   bench/curve.sh                      # full matrix (GPU host: < 10 min)
#   bench/curve.sh --smoke              # CI: tiny (+small on cpu), few steps
#   bench/curve.sh --presets tiny,small --backends cpu,wasm,webgpu
#   bench/curve.sh --presets shakespeare,gpt2b8 --backends webgpu,torch-cuda,cpu,torch-cpu
#
# Backends (cell ids): cpu (native CPU, N threads), cpu1 (native CPU, 1 thread),
#   wasm (WASM SIMD + N threads under Node), wasm1 (WASM SIMD, 1 thread),
#   webgpu (native WebGPU through Dawn), torch-cuda (PyTorch CUDA eager fp32),
#   torch-cpu (PyTorch CPU eager fp32).
# Rows: the presets (tinytrain info) at their own small batches, and the named
#   compute-bound shapes of bench/shapes.sh at real batch sizes: shakespeare
#   (nanoGPT shakespeare_char: 6 layers, d 384, 6 heads, ctx 256, batch 64) and
#   gpt2b8 (the gpt2 preset, whose batch is 8). Shapes run on webgpu, torch-cuda
#   (bench/torch_step.py), cpu and torch-cpu, with --shape-warmup/--shape-steps;
#   gpt2b8 on cpu/torch-cpu (est. ~5 s a step) only when --presets names it, else a
#   skipped row says so. Default rows per backend: tiny..mega everywhere, the
#   shapes as above; cpu1 and wasm1 stop at medium (time). gpt2 (the preset
#   row, = gpt2b8) only when named. Every row reports TFLOP/s from one formula
#   (docs/BENCHMARKS.md). --smoke never runs the shapes.
# Options:
#   --out DIR          output folder (default out/bench-<UTC date>)
#   --presets LIST     comma list (default: all of the above)
#   --backends LIST    comma list (default: all seven)
#   --threads N        threads of cpu and wasm (default: all cores)
#   --data PATH        corpus (default: fortunes; else a corpus built from this repo's text)
#   --steps N          measured steps per cell after warm-up (default 40)
#   --warmup N         warm-up steps from init, untimed (default 10)
#   --min-time S       measure more steps until they take S seconds (default 1)
#   --shape NAME:L,C,H,T,B  one more compute-bound row: layers, d_model, heads,
#                      ctx, batch (repeatable; the row runs where shapes run)
#   --shape-steps N    measured steps of the shape rows (default 10)
#   --shape-warmup N   warm-up steps of the shape rows (default 3)
#   --cell-timeout S   per-cell limit (default 150; smoke 90)
#   --budget S         stop starting new cells after S seconds (default 570)
#   --baseline ID      speedup baseline of the chart (default wasm)
#   --smoke            CI mode (see above): 10 measured steps, 2 warm-up
# Environment: TINYTRAIN (native CLI, default build/tinytrain), WASM_CLI
#   (default build-wasm/tinytrain.js), NODE (default node on PATH, else
#   .carry/node.xz unpacked to /tmp/node), TORCH_ANCHOR (default
#   ../shared/anchors/torch_presets.py, else .carry/torch_presets.py), PYTHON
#   (python3), TINYTRAIN_WEBGPU_LIB (Dawn; default node_modules, else
#   .carry/dawn/libwebgpu_wrapper.so), TT_COMMIT (else git rev-parse HEAD).
# Exit: 0 when the matrix ran (cells may be skipped, with a reason, in the
#   results); 2 for a bad option, unknown preset or backend; 1 otherwise.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/shapes.sh"

die() { echo "curve.sh: error: $*" >&2; exit "${2:-1}"; }
usage_die() { echo "curve.sh: error: $*" >&2; exit 2; }

ALL_BACKENDS="cpu cpu1 wasm wasm1 webgpu torch-cuda torch-cpu"
ALL_PRESETS="tiny small medium large xl huge massive mega gpt2 $TT_SHAPES"
DEFAULT_PRESETS="tiny small medium large xl huge massive mega $TT_SHAPES"
out="" presets="" backends="" threads="" data="" steps=40 warmup=10 min_time=1 cell_timeout="" budget=570
shape_steps=10 shape_warmup=3 baseline=wasm smoke=0
declare -A extra_shape  # --shape NAME -> "layers d_model heads ctx batch"
extra_names=""
while [ $# -gt 0 ]; do
  a=$1; v=${2:-}
  case "$a" in
    --out) out=$v; shift ;;
    --presets) presets=$v; shift ;;
    --backends) backends=$v; shift ;;
    --threads) threads=$v; shift ;;
    --data) data=$v; shift ;;
    --steps) steps=$v; shift ;;
    --warmup) warmup=$v; shift ;;
    --min-time) min_time=$v; shift ;;
    --shape)
      [[ "$v" =~ ^([a-z][a-z0-9_-]*):([1-9][0-9]*),([1-9][0-9]*),([1-9][0-9]*),([1-9][0-9]*),([1-9][0-9]*)$ ]] ||
        usage_die "--shape needs NAME:layers,d_model,heads,ctx,batch (got '$v')"
      n=${BASH_REMATCH[1]}
      case " $ALL_PRESETS behemoth " in *" $n "*) usage_die "--shape $n: the name is taken by a preset or shape" ;; esac
      extra_shape[$n]="${BASH_REMATCH[2]} ${BASH_REMATCH[3]} ${BASH_REMATCH[4]} ${BASH_REMATCH[5]} ${BASH_REMATCH[6]}"
      extra_names+=" $n"; shift ;;
    --shape-steps) shape_steps=$v; shift ;;
    --shape-warmup) shape_warmup=$v; shift ;;
    --cell-timeout) cell_timeout=$v; shift ;;
    --budget) budget=$v; shift ;;
    --baseline) baseline=$v; shift ;;
    --smoke) smoke=1 ;;
    -h|--help) sed -n '2,50p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_die "unknown option '$a' (see --help)" ;;
  esac
  shift
done
isnum() { [[ "$1" =~ ^[0-9]+$ ]]; }
named_presets=0; [ -n "$presets" ] && named_presets=1
for pair in "steps:$steps" "warmup:$warmup" "budget:$budget" "shape-steps:$shape_steps" "shape-warmup:$shape_warmup"; do
  isnum "${pair#*:}" || usage_die "--${pair%%:*} needs a whole number (got '${pair#*:}')"
done
[ "$shape_steps" -ge 10 ] || usage_die "--shape-steps needs at least 10 (tinytrain bench measures >= 10 steps)"
[[ "$min_time" =~ ^[0-9]+([.][0-9]+)?$ ]] || usage_die "--min-time needs a number of seconds (got '$min_time')"
if [ $smoke = 1 ]; then
  steps=10; warmup=2; min_time=0
  : "${cell_timeout:=90}"
  [ -n "$presets" ] || presets="tiny,small"
fi
: "${cell_timeout:=150}"
isnum "$cell_timeout" || usage_die "--cell-timeout needs a whole number (got '$cell_timeout')"
[ -n "$threads" ] || threads=$(nproc 2>/dev/null || echo 1)
isnum "$threads" && [ "$threads" -ge 1 ] || usage_die "--threads needs a whole number >= 1 (got '$threads')"

# presets / backends requested, validated
[ -n "$presets" ] || presets=$(echo $DEFAULT_PRESETS | tr ' ' ,)
for n in $extra_names; do  # --shape rows join the list
  case ",$presets," in *",$n,"*) ;; *) presets+=",$n" ;; esac
done
ALL_PRESETS+="$extra_names"
[ -n "$backends" ] || backends=$(echo $ALL_BACKENDS | tr ' ' ,)
want_presets=$(echo "$presets" | tr ',' ' ')
want_backends=$(echo "$backends" | tr ',' ' ')
for b in $want_backends; do
  case " $ALL_BACKENDS " in *" $b "*) ;; *) usage_die "unknown backend '$b' (valid: $(echo $ALL_BACKENDS | sed 's/ /, /g'))" ;; esac
done
for p in $want_presets; do
  case " $ALL_PRESETS behemoth " in *" $p "*) ;; *) usage_die "unknown preset '$p' (valid: $(echo $ALL_PRESETS | sed 's/ /, /g'))" ;; esac
done

shape_dims() { # shape_dims NAME -> "layers d_model heads ctx batch"; 1 if NAME is no shape
  if [ -n "${extra_shape[$1]:-}" ]; then echo "${extra_shape[$1]}"; else tt_shape_dims "$1"; fi
}
is_shape() { shape_dims "$1" > /dev/null; }

# which presets each backend runs (time budget); smoke: tiny everywhere, small on cpu
allowed() { # allowed BACKEND PRESET
  local b=$1 p=$2
  if [ $smoke = 1 ]; then
    [ "$p" = tiny ] && return 0
    [ "$p" = small ] && [ "$b" = cpu ] && return 0
    return 1
  fi
  if is_shape "$p"; then
    case "$b" in webgpu|torch-cuda|cpu|torch-cpu) return 0 ;; esac
    return 1
  fi
  case "$b" in
    cpu1|wasm1) case "$p" in tiny|small|medium) return 0 ;; esac; return 1 ;;
    cpu|wasm|torch-cpu) case "$p" in gpt2|behemoth) return 1 ;; esac; return 0 ;;
    webgpu|torch-cuda) [ "$p" != behemoth ] ;;
  esac
}

# why an allowed cell is not run by default (printed as a skipped row), "" = run it
too_slow() { # too_slow BACKEND PRESET
  if [ "$2" = gpt2b8 ] && [ $named_presets = 0 ]; then
    case "$1" in cpu|torch-cpu)
      echo "gpt2b8 on the CPU: 4.6 TFLOP a step, an estimated ~5 s at the ~1 TFLOP/s the CPU reaches on the shakespeare shape; not in the default run (--presets gpt2b8 --backends cpu,torch-cpu measures it)" ;;
    esac
  fi
}

# ---------------------------------------------------------------- tools
TINYTRAIN=${TINYTRAIN:-$root/build/tinytrain}
[ -x "$TINYTRAIN" ] || die "native CLI not found: $TINYTRAIN (build it: cmake -S . -B build && cmake --build build, or set TINYTRAIN)"
WASM_CLI=${WASM_CLI:-$root/build-wasm/tinytrain.js}
if [ -z "${NODE:-}" ]; then
  if command -v node >/dev/null 2>&1; then NODE=$(command -v node)
  elif [ -f "$root/.carry/node.xz" ]; then
    [ -x /tmp/node ] || { xz -dc "$root/.carry/node.xz" > /tmp/node.part && chmod +x /tmp/node.part && mv /tmp/node.part /tmp/node; }
    NODE=/tmp/node
  fi
fi
NODE=${NODE:-}
if [ -n "$NODE" ] && ! "$NODE" --version >/dev/null 2>&1; then NODE=""; fi
PYTHON=${PYTHON:-python3}
if [ -z "${TORCH_ANCHOR:-}" ]; then
  for f in "$root/../shared/anchors/torch_presets.py" "$root/.carry/torch_presets.py"; do
    [ -f "$f" ] && { TORCH_ANCHOR=$f; break; }
  done
fi
TORCH_ANCHOR=${TORCH_ANCHOR:-}
TORCH_STEP=$here/torch_step.py
if [ -z "${TINYTRAIN_WEBGPU_LIB:-}" ] && [ ! -f "$root/node_modules/bun-webgpu-linux-x64/libwebgpu_wrapper.so" ] &&
   [ -f "$root/.carry/dawn/libwebgpu_wrapper.so" ]; then
  export TINYTRAIN_WEBGPU_LIB=$root/.carry/dawn/libwebgpu_wrapper.so
fi
if [ -z "${TT_COMMIT:-}" ]; then
  TT_COMMIT=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
fi
export TT_COMMIT

date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)
[ -n "$out" ] || out="$root/out/bench-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$out/logs" || die "cannot create output folder '$out'"
res="$out/results.jsonl"
: > "$res" || die "cannot write $res"

# corpus: --data, else fortunes (the CLI's default), else this repository's own text
if [ -z "$data" ]; then
  fdir=""
  for d in /usr/share/games/fortunes /usr/share/fortune /usr/share/fortunes; do [ -d "$d" ] && { fdir=$d; break; }; done
  if [ -z "$fdir" ]; then
    data="$out/corpus.txt"
    (cd "$root" && find src docs scripts tests web -type f \( -name '*.c' -o -name '*.h' -o -name '*.md' -o -name '*.wgsl' \
      -o -name '*.sh' -o -name '*.mjs' \) -not -path '*/dist/*' -not -path '*/node_modules/*' 2>/dev/null | LC_ALL=C sort |
      xargs cat) > "$data"
    echo "curve.sh: the fortunes collection is not installed: batches come from this repository's text ($(wc -c < "$data") bytes)"
  fi
fi
data_args=()
[ -n "$data" ] && data_args=(--data "$data")

# ---------------------------------------------------------------- helpers
jstr() { # JSON string of $1
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\t'/ }
  s=${s//$'\r'/ }
  s=${s//$'\n'/ }
  printf '"%s"' "$s"
}
skip_row() { # skip_row LABEL PRESET REASON
  printf '{"schema":"tinytrain.bench/1","kind":"skipped","label":%s,"preset":%s,"reason":%s,"shape":%s,"date":%s,"commit":%s}\n' \
    "$(jstr "$1")" "$(jstr "$2")" "$(jstr "$3")" "$(is_shape "$2" && echo true || echo false)" "$(jstr "$date_utc")" \
    "$(jstr "$TT_COMMIT")" >> "$res"
  echo "        skipped: $3"
}
t_start=$(date +%s.%N)
elapsed() { awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.0f", b-a}'; }
fmt_mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }

# ---------------------------------------------------------------- availability
declare -A why_not   # backend -> reason it cannot run here ("" = available)
for b in $want_backends; do why_not[$b]=""; done
info_json=$("$TINYTRAIN" info --json 2>/dev/null) || die "'$TINYTRAIN info --json' failed"
if [[ " $want_backends " == *" webgpu "* ]]; then
  if ! grep -q '"webgpu":{"available":true' <<< "$info_json"; then
    r=$(sed -n 's/.*"webgpu":{"available":false,"reason":"\([^"]*\)".*/\1/p' <<< "$info_json")
    why_not[webgpu]="webgpu unavailable: ${r:-no adapter}"
  fi
fi
for b in wasm wasm1; do
  [[ " $want_backends " == *" $b "* ]] || continue
  if [ -z "$NODE" ]; then why_not[$b]="node not found (install Node 20, or set NODE=...)"
  elif [ ! -f "$WASM_CLI" ]; then why_not[$b]="WASM CLI not built ($WASM_CLI; run scripts/build-wasm.sh)"; fi
done
torch_ver="" torch_gpu=""
if [[ " $want_backends " == *" torch-"* ]]; then
  treason=""
  if ! command -v "$PYTHON" >/dev/null 2>&1; then treason="python3 not found"
  elif ! torch_ver=$("$PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null); then treason="PyTorch not installed ($PYTHON -c 'import torch' failed)"; fi
  for b in torch-cuda torch-cpu; do [[ " $want_backends " == *" $b "* ]] && why_not[$b]=$treason; done
  if [ -z "$treason" ] && [[ " $want_backends " == *" torch-cuda "* ]]; then
    torch_gpu=$("$PYTHON" -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")' 2>/dev/null)
    [ -n "$torch_gpu" ] || why_not[torch-cuda]="PyTorch has no CUDA device here"
  fi
fi

# ---------------------------------------------------------------- machine row
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
mem_kb=$(sed -n 's/^MemTotal:[[:space:]]*\([0-9]*\) kB/\1/p' /proc/meminfo 2>/dev/null)
gpu_name="" gpu_driver=""
if command -v nvidia-smi >/dev/null 2>&1; then
  IFS=, read -r gpu_name gpu_driver < <(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
  gpu_driver=${gpu_driver# }
fi
webgpu_dev=$(sed -n 's/.*"webgpu":{"available":true,"device":"\([^"]*\)".*/\1/p' <<< "$info_json")
node_ver=""; [ -n "$NODE" ] && node_ver=$("$NODE" --version 2>/dev/null)
cmdline="bench/curve.sh"; [ $smoke = 1 ] && cmdline+=" --smoke"
[ $named_presets = 1 ] && cmdline+=" --presets $presets"
printf '{"schema":"tinytrain.bench/1","kind":"machine","date":%s,"commit":%s,"cpu":%s,"cores":%s,"mem_bytes":%s,"os":%s,"gpu":%s,"gpu_driver":%s,"webgpu_adapter":%s,"webgpu_lib":%s,"node":%s,"torch":%s,"torch_gpu":%s,"threads":%s,"steps":%s,"warmup":%s,"shape_steps":%s,"shape_warmup":%s,"min_time":%s,"smoke":%s,"data":%s,"command":%s}\n' \
  "$(jstr "$date_utc")" "$(jstr "$TT_COMMIT")" "$(jstr "$cpu_model")" "$(nproc 2>/dev/null || echo 0)" "$(( ${mem_kb:-0} * 1024 ))" \
  "$(jstr "$(uname -srm)")" "$(jstr "$gpu_name")" "$(jstr "$gpu_driver")" "$(jstr "$webgpu_dev")" \
  "$(jstr "${TINYTRAIN_WEBGPU_LIB:-node_modules/bun-webgpu-linux-x64}")" "$(jstr "$node_ver")" "$(jstr "$torch_ver")" \
  "$(jstr "$torch_gpu")" "$threads" "$steps" "$warmup" "$shape_steps" "$shape_warmup" "$min_time" "$([ $smoke = 1 ] && echo true || echo false)" \
  "$(jstr "${data:-fortunes (default)}")" "$(jstr "$cmdline")" >> "$res"

# ---------------------------------------------------------------- the cells
cells=()   # "backend preset", in run order: for each preset every backend side by side
for p in $want_presets; do
  for b in $want_backends; do
    case "$b" in torch-*) continue ;; esac
    allowed "$b" "$p" && cells+=("$b $p")
  done
done
torch_cells=0
for b in torch-cuda torch-cpu; do
  [[ " $want_backends " == *" $b "* ]] || continue
  for p in $want_presets; do allowed "$b" "$p" && torch_cells=$((torch_cells + 1)); done
done
n_total=$(( ${#cells[@]} + torch_cells ))
n_done=0
echo "curve.sh: ${n_total} cells ($(echo $want_backends | sed 's/ /, /g') x $(echo $want_presets | sed 's/ /, /g')), $threads threads, $warmup warm-up + $steps measured steps (min ${min_time}s), cell timeout ${cell_timeout}s, budget ${budget}s"
echo "curve.sh: output $out"

over_budget() { [ "$(elapsed)" -ge "$budget" ]; }

# torch: one process per device and script for all its rows (importing torch
# is slow): the anchor (torch_presets.py) for the presets, bench/torch_step.py
# for the compute-bound shapes
run_torch() { # run_torch BACKEND DEVICE
  local b=$1 dev=$2 ps=() ss=() p
  for p in $want_presets; do
    allowed "$b" "$p" || continue
    if is_shape "$p"; then ss+=("$p"); else ps+=("$p"); fi
  done
  [ ${#ps[@]} -gt 0 ] && torch_batch "$b" "$dev" anchor "${ps[@]}"
  [ ${#ss[@]} -gt 0 ] && torch_batch "$b" "$dev" step "${ss[@]}"
  return 0
}

torch_batch() { # torch_batch BACKEND DEVICE anchor|step NAME...
  local b=$1 dev=$2 kind=$3 p why
  shift 3
  local ps=()
  for p in "$@"; do  # cells that cannot run become skipped rows here
    why=${why_not[$b]}
    [ -z "$why" ] && why=$(too_slow "$b" "$p")
    [ -z "$why" ] && over_budget && why="time budget (${budget}s) used up"
    [ -z "$why" ] && [ $kind = anchor ] && { [ -n "$TORCH_ANCHOR" ] && [ -f "$TORCH_ANCHOR" ] ||
      why="PyTorch anchor not found (set TORCH_ANCHOR=.../torch_presets.py)"; }
    if [ -n "$why" ]; then n_done=$((n_done + 1)); echo "[$n_done/$n_total] $b x $p"; skip_row "$b" "$p" "$why"
    else ps+=("$p"); fi
  done
  [ ${#ps[@]} -gt 0 ] || return 0
  local list; list=$(IFS=,; echo "${ps[*]}")
  local tlimit=$(( cell_timeout * ${#ps[@]} ))
  echo "[$((n_done + 1))-$((n_done + ${#ps[@]}))/$n_total] $b x ${list} (one PyTorch process, limit ${tlimit}s, elapsed $(fmt_mmss "$(elapsed)"))"
  local log="$out/logs/$b-$kind.log" raw="$out/logs/$b-$kind.jsonl"
  local cmd=("$PYTHON" "$TORCH_ANCHOR" "$dev" eager fp32 "$list")
  if [ $kind = step ]; then
    cmd=("$PYTHON" "$TORCH_STEP" --device "$dev" --warmup "$shape_warmup" --steps "$shape_steps" --min-time "$min_time")
    [ "$dev" = cpu ] && cmd+=(--threads "$threads")
    for p in "${ps[@]}"; do cmd+=(--shape "$p:$(shape_dims "$p" | tr ' ' ,)"); done
  fi
  : > "$raw"
  PYTHONUNBUFFERED=1 timeout -k 10 "$tlimit" "${cmd[@]}" 2> "$log" |
    while IFS= read -r line; do
      echo "$line" >> "$raw"
      echo "        $line"
    done
  "$PYTHON" - "$raw" "$b" "$dev" "$torch_ver" "$torch_gpu" "$cpu_model" "$date_utc" "$TT_COMMIT" "$info_json" >> "$res" <<'EOF'
import json, sys
raw, label, dev, ver, gpu, cpu, date, commit, info = sys.argv[1:10]
flops = {p["name"]: p["step_flops"] for p in json.loads(info)["presets"]}
model = {p["name"]: p["model"] for p in json.loads(info)["presets"]}
runtime = "pytorch %s eager fp32 (TF32 off)" % dev
for line in open(raw):
    line = line.strip()
    if not line.startswith("{"): continue
    r = json.loads(line)
    row = {"schema": "tinytrain.bench/1", "kind": "result", "bench": "train_step", "label": label}
    if "shape" in r:  # bench/torch_step.py: a compute-bound shape, median of per-step times
        ms = r["ms_per_step"]["median"]; gf = r["step_flops"]
        row.update({"preset": r["shape"], "shape": True,
            "model": {"layers": r["layers"], "d_model": r["d_model"], "heads": r["heads"], "ctx": r["ctx"],
                      "batch": r["batch"], "vocab": 256, "params": r["params"]},
            "backend": "torch", "runtime": runtime, "device": gpu if dev == "cuda" else cpu,
            "threads": r.get("threads", 0), "accum": 1, "tokens_per_step": r["tokens_per_step"],
            "warmup_steps": r["warmup_steps"], "measured_steps": r["measured_steps"], "ms_per_step": r["ms_per_step"],
            "tokens_per_s": r["tokens_per_s"], "gflop_per_step": gf / 1e9, "gflops": gf / (ms * 1e-3) / 1e9,
            "loss": {"1": None, "10": None, "50": None}, "final_loss": r.get("loss"), "parity": False,
            "params_torch": r["params"], "torch": ver, "machine": {"cpu": cpu}, "commit": commit, "date": date,
            "step_contains": "bench/torch_step.py (compute-bound shapes): the same model (separate q/k/v, tied head, "
                "exact GELU, fp32, TF32 off, eager); batch sampling on the device, forward + cross-entropy + backward + "
                "clip_grad_norm_ + AdamW (fused on CUDA), the loss read back every step; median of the timed steps "
                "after warm-up. Own init and random bytes: speed only, no loss parity."})
    else:  # the anchor: presets, mean of its timed steps
        ms = r["ms_per_step"]; p = r["preset"]
        gf = flops.get(p)
        row.update({"preset": p, "shape": False,
            "model": model.get(p), "backend": "torch", "runtime": runtime,
            "device": gpu if dev == "cuda" else cpu, "threads": 0, "accum": 1, "tokens_per_step": None,
            "ms_per_step": {"median": None, "mean": ms, "min": None, "p10": None, "p90": None, "max": None},
            "tokens_per_s": r.get("tok_per_s"), "gflop_per_step": gf / 1e9 if gf else None,
            "gflops": gf / (ms * 1e-3) / 1e9 if gf and ms else None,
            "loss": {"1": None, "10": None, "50": None}, "final_loss": r.get("loss"), "parity": False,
            "params_torch": r.get("params"), "torch": ver, "machine": {"cpu": cpu}, "commit": commit, "date": date,
            "step_contains": "PyTorch anchor (torch_presets.py): forward + cross-entropy + backward + clip_grad_norm_ + "
                "AdamW (fused on CUDA) on random bytes, batch indexing on the device included; the loss is read back once "
                "after all timed steps; mean of 50 (cuda) / 30 (cpu) steps after 5 warm-up. Own init and data: speed "
                "context only, no loss parity."})
    print(json.dumps(row, separators=(",", ":")))
EOF
  for p in "${ps[@]}"; do
    n_done=$((n_done + 1))
    if ! grep -qE "\"(preset|shape)\": *\"$p\"" "$raw"; then  # (the scripts' own json.dumps has spaces)
      why=$(grep -v '^\s*$' "$log" | tail -1 | cut -c1-200)
      skip_row "$b" "$p" "no result from $([ $kind = step ] && echo bench/torch_step.py || echo the PyTorch anchor) (timeout ${tlimit}s or error${why:+: $why})"
    fi
  done
}

[[ " $want_backends " == *" torch-cuda "* ]] && run_torch torch-cuda cuda

for cell in "${cells[@]}"; do
  b=${cell% *} p=${cell#* }
  n_done=$((n_done + 1))
  echo "[$n_done/$n_total] $b x $p (elapsed $(fmt_mmss "$(elapsed)"))"
  if [ -n "${why_not[$b]}" ]; then skip_row "$b" "$p" "${why_not[$b]}"; continue; fi
  why=$(too_slow "$b" "$p"); if [ -n "$why" ]; then skip_row "$b" "$p" "$why"; continue; fi
  if over_budget; then skip_row "$b" "$p" "time budget (${budget}s) used up"; continue; fi
  if is_shape "$p"; then  # a named shape: its dimensions, its own (shorter) step counts
    set -- $(shape_dims "$p")
    args=(bench --layers "$1" --d-model "$2" --heads "$3" --ctx "$4" --batch "$5" --steps "$shape_steps" --warmup "$shape_warmup")
  else
    args=(bench --preset "$p" --steps "$steps" --warmup "$warmup")
  fi
  args+=(--min-time "$min_time" --json --label "$b" "${data_args[@]}")
  case "$b" in
    cpu) cmd=("$TINYTRAIN" "${args[@]}" --backend cpu --threads "$threads") ;;
    cpu1) cmd=("$TINYTRAIN" "${args[@]}" --backend cpu --threads 1) ;;
    wasm) cmd=("$NODE" --no-experimental-fetch "$WASM_CLI" "${args[@]}" --backend cpu --threads "$threads") ;;
    wasm1) cmd=("$NODE" --no-experimental-fetch "$WASM_CLI" "${args[@]}" --backend cpu --threads 1) ;;
    webgpu) cmd=("$TINYTRAIN" "${args[@]}" --backend webgpu) ;;
  esac
  log="$out/logs/$b-$p.log"
  t0=$(date +%s.%N)
  line=$(timeout -k 5 "$cell_timeout" "${cmd[@]}" 2> "$log" | grep '^{' | tail -1)
  rc=${PIPESTATUS[0]}
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')
  if [ -n "$line" ] && [ "$rc" = 0 ]; then
    # the row is named by the shape (tinytrain bench names the base preset of the overrides)
    is_shape "$p" && line=$(sed 's/"preset":"[^"]*"/"preset":"'"$p"'","shape":true/' <<< "$line")
    echo "${line%\}},\"cell_wall_s\":$wall}" >> "$res"
    med=$(sed -n 's/.*"ms_per_step":{"median":\([0-9.]*\).*/\1/p' <<< "$line")
    l50=$(sed -n 's/.*"loss":{"1":\([^,]*\),"10":\([^,]*\),"50":\([^}]*\)}.*/\1 \/ \2 \/ \3/p' <<< "$line")
    gfs=$(sed -n 's/.*"gflops":\([0-9.]*\).*/\1/p' <<< "$line")
    echo "        ${med} ms/step (${gfs} GFLOP/s), loss@1/10/50 ${l50}, ${wall}s"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    skip_row "$b" "$p" "timeout after ${cell_timeout}s"
  else
    why=$(grep -v '^\s*$' "$log" | tail -1 | cut -c1-300)
    skip_row "$b" "$p" "failed (exit $rc): ${why:-no output}"
  fi
done

[[ " $want_backends " == *" torch-cpu "* ]] && run_torch torch-cpu cpu

echo "curve.sh: matrix done in $(fmt_mmss "$(elapsed)") ($(grep -c '"kind":"result"' "$res") results, $(grep -c '"kind":"skipped"' "$res") skipped)"

# ---------------------------------------------------------------- report
if [ -z "$NODE" ]; then
  echo "curve.sh: node not found: no report (run: node bench/report.mjs $res)" >&2
  exit 1
fi
"$NODE" "$here/report.mjs" "$res" --out "$out" --baseline "$baseline" || die "report.mjs failed"
echo "curve.sh: wrote $res, $out/report.md, $out/speedup.svg"
