# shapes.sh — the named compute-bound shapes of the benchmark (sourced by
# bench/curve.sh and bench/matmul_vs_cublas.sh): model sizes at the batch
# sizes people train with, where a step is bound by arithmetic, not by kernel
# launches. One name = layers, d_model, heads, ctx, batch (vocab 256, the
# presets' GPT-2 shape otherwise).
#   shakespeare  nanoGPT's shakespeare_char model and batch
#   gpt2b8       the gpt2 preset (GPT-2 small) at its own batch, 8 sequences
TT_SHAPES="shakespeare gpt2b8"

# tt_shape_dims NAME -> "layers d_model heads ctx batch" on stdout; 1 if unknown
tt_shape_dims() {
  case "$1" in
    shakespeare) echo "6 384 6 256 64" ;;
    gpt2b8) echo "12 768 12 1024 8" ;;
    *) return 1 ;;
  esac
}

# tt_shape_args NAME -> the tinytrain model options of that shape on stdout
tt_shape_args() {
  local d
  d=$(tt_shape_dims "$1") || return 1
  set -- $d
  echo "--layers $1 --d-model $2 --heads $3 --ctx $4 --batch $5"
}
