"""PyTorch CPU eager anchor for dev/cpu_step/run.sh: the training step of
shared/anchors/torch_presets.py (same model, AdamW, clip) at the mega preset
and at the shakespeare_char shape, on all the cores torch sees.
usage: python3 torch_cpu.py ANCHORS_DIR mega:STEPS shakespeare:STEPS ...
(NAME=L,D,H,T,B:STEPS times that shape under NAME)
Prints one JSON line per shape (ms_per_step: mean over STEPS after 5 warm-up steps)."""
import sys, json
sys.path.insert(0, sys.argv[1])
import torch
import torch_presets as tp

tp.PRESETS["shakespeare"] = (6, 384, 6, 256, 64)  # layers, d_model, heads, ctx, batch
for arg in sys.argv[2:]:
    name, steps = arg.split(":")
    if "=" in name:
        name, dims = name.split("=")
        tp.PRESETS[name] = tuple(int(x) for x in dims.split(","))
    r = tp.bench(name, "cpu", "eager", int(steps))
    r.update(threads=torch.get_num_threads())
    print(json.dumps(r), flush=True)
