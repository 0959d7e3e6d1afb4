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
#
# Backends (cell ids): cpu (native CPU, N threads), cpu1 (native CPU, 1 thread),
#   wasm (WASM SIMD + N threads under Node), wasm1 (WASM SIMD, 1 thread),
#   webgpu (native WebGPU through Dawn), torch-cuda (PyTorch CUDA eager fp32),
#   torch-cpu (PyTorch CPU eager fp32).
# Default presets per backend: tiny..mega everywhere; gpt2 also for webgpu and
#   torch-cuda; cpu1 and wasm1 stop at medium (time).
# Options:
#   --out DIR          output folder (default out/bench-<UTC date>)
#   --presets LIST     comma list (default: all of the above)
#   --backends LIST    comma list (default: all seven)
#   --threads N        threads of cpu and wasm (default: all cores)
#   --data PATH        corpus (default: fortunes; else a corpus built from this repo's text)
#   --steps N          measured steps per cell after warm-up (default 40)
#   --warmup N         warm-up steps from init, untimed (default 10)
#   --min-time S       measure more steps until they take S seconds (default 1)
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

die() { echo "curve.sh: error: $*" >&2; exit "${2:-1}"; }
usage_die() { echo "curve.sh: error: $*" >&2; exit 2; }

ALL_BACKENDS="cpu cpu1 wasm wasm1 webgpu torch-cuda torch-cpu"
ALL_PRESETS="tiny small medium large xl huge massive mega gpt2"
out="" presets="" backends="" threads="" data="" steps=40 warmup=10 min_time=1 cell_timeout="" budget=570
baseline=wasm smoke=0
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
    --cell-timeout) cell_timeout=$v; shift ;;
    --budget) budget=$v; shift ;;
    --baseline) baseline=$v; shift ;;
    --smoke) smoke=1 ;;
    -h|--help) sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_die "unknown option '$a' (see --help)" ;;
  esac
  shift
done
isnum() { [[ "$1" =~ ^[0-9]+$ ]]; }
for pair in "steps:$steps" "warmup:$warmup" "budget:$budget"; do
  isnum "${pair#*:}" || usage_die "--${pair%%:*} needs a whole number (got '${pair#*:}')"
done
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
[ -n "$presets" ] || presets=$(echo $ALL_PRESETS | tr ' ' ,)
[ -n "$backends" ] || backends=$(echo $ALL_BACKENDS | tr ' ' ,)
want_presets=$(echo "$presets" | tr ',' ' ')
want_backends=$(echo "$backends" | tr ',' ' ')
for b in $want_backends; do
  case " $ALL_BACKENDS " in *" $b "*) ;; *) usage_die "unknown backend '$b' (valid: $(echo $ALL_BACKENDS | sed 's/ /, /g'))" ;; esac
done
for p in $want_presets; do
  case " $ALL_PRESETS behemoth " in *" $p "*) ;; *) usage_die "unknown preset '$p' (valid: $(echo $ALL_PRESETS | sed 's/ /, /g'))" ;; esac
done

# which presets each backend runs (time budget); smoke: tiny everywhere, small on cpu
allowed() { # allowed BACKEND PRESET
  local b=$1 p=$2
  if [ $smoke = 1 ]; then
    [ "$p" = tiny ] && return 0
    [ "$p" = small ] && [ "$b" = cpu ] && return 0
    return 1
  fi
  case "$b" in
    cpu1|wasm1) case "$p" in tiny|small|medium) return 0 ;; esac; return 1 ;;
    cpu|wasm|torch-cpu) case "$p" in gpt2|behemoth) return 1 ;; esac; return 0 ;;
    webgpu|torch-cuda) [ "$p" != behemoth ] ;;
  esac
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
  printf '{"schema":"tinytrain.bench/1","kind":"skipped","label":%s,"preset":%s,"reason":%s,"date":%s,"commit":%s}\n' \
    "$(jstr "$1")" "$(jstr "$2")" "$(jstr "$3")" "$(jstr "$date_utc")" "$(jstr "$TT_COMMIT")" >> "$res"
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
  if [ -z "$TORCH_ANCHOR" ] || [ ! -f "$TORCH_ANCHOR" ]; then treason="PyTorch anchor not found (set TORCH_ANCHOR=.../torch_presets.py)"
  elif ! command -v "$PYTHON" >/dev/null 2>&1; then treason="python3 not found"
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
printf '{"schema":"tinytrain.bench/1","kind":"machine","date":%s,"commit":%s,"cpu":%s,"cores":%s,"mem_bytes":%s,"os":%s,"gpu":%s,"gpu_driver":%s,"webgpu_adapter":%s,"webgpu_lib":%s,"node":%s,"torch":%s,"torch_gpu":%s,"threads":%s,"steps":%s,"warmup":%s,"min_time":%s,"smoke":%s,"data":%s,"command":%s}\n' \
  "$(jstr "$date_utc")" "$(jstr "$TT_COMMIT")" "$(jstr "$cpu_model")" "$(nproc 2>/dev/null || echo 0)" "$(( ${mem_kb:-0} * 1024 ))" \
  "$(jstr "$(uname -srm)")" "$(jstr "$gpu_name")" "$(jstr "$gpu_driver")" "$(jstr "$webgpu_dev")" \
  "$(jstr "${TINYTRAIN_WEBGPU_LIB:-node_modules/bun-webgpu-linux-x64}")" "$(jstr "$node_ver")" "$(jstr "$torch_ver")" \
  "$(jstr "$torch_gpu")" "$threads" "$steps" "$warmup" "$min_time" "$([ $smoke = 1 ] && echo true || echo false)" \
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

# torch: one process per device for all its presets (importing torch is slow)
run_torch() { # run_torch BACKEND DEVICE
  local b=$1 dev=$2 ps=()
  for p in $want_presets; do allowed "$b" "$p" && ps+=("$p"); done
  [ ${#ps[@]} -gt 0 ] || return 0
  if [ -n "${why_not[$b]}" ]; then
    for p in "${ps[@]}"; do n_done=$((n_done + 1)); echo "[$n_done/$n_total] $b x $p"; skip_row "$b" "$p" "${why_not[$b]}"; done
    return 0
  fi
  if over_budget; then
    for p in "${ps[@]}"; do n_done=$((n_done + 1)); echo "[$n_done/$n_total] $b x $p"; skip_row "$b" "$p" "time budget (${budget}s) used up"; done
    return 0
  fi
  local list; list=$(IFS=,; echo "${ps[*]}")
  local tlimit=$(( cell_timeout * ${#ps[@]} ))
  echo "[$((n_done + 1))-$((n_done + ${#ps[@]}))/$n_total] $b x ${list} (one PyTorch process, limit ${tlimit}s, elapsed $(fmt_mmss "$(elapsed)"))"
  local log="$out/logs/$b.log" raw="$out/logs/$b.jsonl"
  : > "$raw"
  PYTHONUNBUFFERED=1 timeout -k 10 "$tlimit" "$PYTHON" "$TORCH_ANCHOR" "$dev" eager fp32 "$list" 2> "$log" |
    while IFS= read -r line; do
      echo "$line" >> "$raw"
      echo "        $line"
    done
  "$PYTHON" - "$raw" "$b" "$dev" "$torch_ver" "$torch_gpu" "$cpu_model" "$date_utc" "$TT_COMMIT" "$info_json" >> "$res" <<'EOF'
import json, sys
raw, label, dev, ver, gpu, cpu, date, commit, info = sys.argv[1:10]
flops = {p["name"]: p["step_flops"] for p in json.loads(info)["presets"]}
model = {p["name"]: p["model"] for p in json.loads(info)["presets"]}
for line in open(raw):
    line = line.strip()
    if not line.startswith("{"): continue
    r = json.loads(line); ms = r["ms_per_step"]; p = r["preset"]
    gf = flops.get(p)
    print(json.dumps({"schema": "tinytrain.bench/1", "kind": "result", "bench": "train_step", "label": label, "preset": p,
        "model": model.get(p), "backend": "torch", "runtime": "pytorch %s eager fp32 (TF32 off)" % dev,
        "device": gpu if dev == "cuda" else cpu, "threads": 0, "accum": 1, "tokens_per_step": None,
        "ms_per_step": {"median": None, "mean": ms, "min": None, "p10": None, "p90": None, "max": None},
        "tokens_per_s": r.get("tok_per_s"), "gflop_per_step": gf / 1e9 if gf else None,
        "gflops": gf / (ms * 1e-3) / 1e9 if gf and ms else None,
        "loss": {"1": None, "10": None, "50": None}, "final_loss": r.get("loss"), "parity": False,
        "params_torch": r.get("params"), "torch": ver, "machine": {"cpu": cpu}, "commit": commit, "date": date,
        "step_contains": "PyTorch anchor (torch_presets.py): forward + cross-entropy + backward + clip_grad_norm_ + "
            "AdamW (fused on CUDA) on random bytes, batch indexing on the device included; the loss is read back once "
            "after all timed steps; mean of 50 (cuda) / 30 (cpu) steps after 5 warm-up. Own init and data: speed "
            "context only, no loss parity."}, separators=(",", ":")))
EOF
  local p
  for p in "${ps[@]}"; do
    n_done=$((n_done + 1))
    if ! grep -q "\"preset\": *\"$p\"" "$raw"; then  # (the anchor's own json.dumps has spaces)
      local why; why=$(grep -v '^\s*$' "$log" | tail -1 | cut -c1-200)
      skip_row "$b" "$p" "no result from the PyTorch anchor (timeout ${tlimit}s or error${why:+: $why})"
    fi
  done
}

[[ " $want_backends " == *" torch-cuda "* ]] && run_torch torch-cuda cuda

for cell in "${cells[@]}"; do
  b=${cell% *} p=${cell#* }
  n_done=$((n_done + 1))
  echo "[$n_done/$n_total] $b x $p (elapsed $(fmt_mmss "$(elapsed)"))"
  if [ -n "${why_not[$b]}" ]; then skip_row "$b" "$p" "${why_not[$b]}"; continue; fi
  if over_budget; then skip_row "$b" "$p" "time budget (${budget}s) used up"; continue; fi
  args=(bench --preset "$p" --steps "$steps" --warmup "$warmup" --min-time "$min_time" --json --label "$b" "${data_args[@]}")
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
    echo "${line%\}},\"cell_wall_s\":$wall}" >> "$res"
    med=$(sed -n 's/.*"ms_per_step":{"median":\([0-9.]*\).*/\1/p' <<< "$line")
    l50=$(sed -n 's/.*"loss":{"1":\([^,]*\),"10":\([^,]*\),"50":\([^}]*\)}.*/\1 \/ \2 \/ \3/p' <<< "$line")
    echo "        ${med} ms/step, loss@1/10/50 ${l50}, ${wall}s"
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
