"""greedy.py — greedy decoding with tinytrain's context rule, shared by the
Hugging Face checks: token = byte (vocab 256); the window holds at most ctx
tokens, and when it is full the last ctx/2 are kept before the next token is
appended (what `tinytrain sample` does). The argmax takes the first maximum,
as tinytrain's does."""
import torch


def greedy_windowed(model, prompt, n, device):
    """The n greedy bytes after the bytes `prompt` (b"\\n" when empty)."""
    ctx = model.config.n_positions
    window = []

    def feed(tok):
        nonlocal window
        if len(window) == ctx:
            window = window[ctx - ctx // 2:]
        window.append(tok)

    for b in prompt if prompt else b"\n":
        feed(b)
    out = bytearray()
    with torch.no_grad():
        for _ in range(n):
            ids = torch.tensor([window], dtype=torch.long, device=device)
            tok = int(torch.argmax(model(input_ids=ids).logits[0, -1]).item())
            out.append(tok)
            feed(tok)
    return bytes(out)
