"""PyTorch's side of a training comparison: the batches Partita's launch
samples, torch.optim.AdamW over them, and the check of Partita's trained
parameters against torch's.

The batches: the splitmix64 sampler of tools/LaunchCommand.cpp (sequence j of
the run starts at splitmix64(seed * 1000003 + j) mod (len(tokens) - T - 1)); a
step takes its PER_STEP sequences whole (dp x micro-batches x batch on
Partita's side)."""
import numpy as np
import torch
import torch.nn.functional as F

from torch_params import match_initializers

MASK = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def batch(tokens, step, per_step, seq, seed):
    """Step `step`'s (1-based) ids and next-token labels, [per_step, seq] each."""
    ids, labels = [], []
    for j in range((step - 1) * per_step, step * per_step):
        off = splitmix64((seed * 1000003 + j) & MASK) % (len(tokens) - seq - 1)
        ids.append(tokens[off:off + seq])
        labels.append(tokens[off + 1:off + seq + 1])
    return torch.from_numpy(np.stack(ids)), torch.from_numpy(np.stack(labels))


class Reference:
    """Trains `model` STEPS AdamW steps (cross-entropy of its first output
    against the next tokens) and keeps what the comparison needs: the losses,
    the parameters before and after, each element's largest |gradient| over
    the steps, and which parameters got a gradient at all."""

    def __init__(self, model, tokens, steps, per_step, seq, seed, lr, weight_decay, betas=(0.9, 0.999), eps=1e-8,
                 lr_factor=lambda k: 1.0, clip=0.0, log=None):
        opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
        self.initial = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
        self.max_grad = {n: np.zeros_like(p) for n, p in self.initial.items()}
        self.has_grad = set()
        self.losses = []
        for step in range(1, steps + 1):
            ids, labels = batch(tokens, step, per_step, seq, seed)
            logits = model(ids)
            if isinstance(logits, tuple):  # the logits first, then other outputs (BERT's pooler)
                logits = logits[0]
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
            opt.zero_grad()
            loss.backward()
            for n, p in model.named_parameters():
                if p.grad is not None:  # None: the loss does not depend on it (a pooler beside an LM loss)
                    self.max_grad[n] = np.maximum(self.max_grad[n], p.grad.abs().numpy())
                    self.has_grad.add(n)
            if clip > 0:
                norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip))
                if log:
                    log(f"step {step}: gradient norm {norm:.4f} " + (f"(clipped to {clip})" if norm > clip else
                                                                     "(not clipped)"))
            opt.step()
            sched.step()
            self.losses.append(loss.item())
        self.final = {n: p.detach().numpy() for n, p in model.named_parameters()}

    def check_losses(self, check, ours, tolerance, label="", quiet=False):
        """Every step's loss within `tolerance` (relative), and as many steps."""
        check(len(ours) == len(self.losses), f"{label}{len(ours)} losses, torch {len(self.losses)}", quiet)
        for step, (a, b) in enumerate(zip(ours, self.losses), 1):
            err = abs(a - b) / abs(b)
            check(err <= tolerance, f"{label}step {step}: loss partita {a:.6f} torch {b:.6f} (relative error {err:.1e})",
                  quiet)

    def check_parameters(self, check, fixture, trained, tolerance, label="", quiet=False):
        """Each trained initializer (`trained`: name -> array, from `partita
        merge`) against torch's parameter within `tolerance` (relative
        Frobenius). A parameter torch never got a gradient for must come back
        unchanged, bit for bit. Elements whose gradient is zero in exact
        arithmetic (softmax ignores the key bias, also the key third of a fused
        q/k/v bias) are left out: AdamW turns rounding noise into full steps on
        both sides. `quiet`: only failures are printed."""
        for init_name, pname, transposed in match_initializers(fixture, self.initial):
            if init_name not in trained:
                continue
            ours, want = trained[init_name], self.final[pname].T if transposed else self.final[pname]
            if pname not in self.has_grad:
                start = self.initial[pname].T if transposed else self.initial[pname]
                same = ours.tobytes() == start.astype(ours.dtype).tobytes()
                check(same, f"{label}{init_name}: the loss does not depend on it; "
                      f"{'unchanged' if same else 'changed by training'}", quiet)
                continue
            counted = (self.max_grad[pname].T if transposed else self.max_grad[pname]) >= 1e-6
            if not counted.any():
                if not quiet:
                    print(f"skip {init_name}: its gradient is zero in exact arithmetic "
                          f"(max |g| {self.max_grad[pname].max():.1e})")
                continue
            if not counted.all() and not quiet:
                print(f"{init_name}: {int((~counted).sum())} of {counted.size} elements have a zero gradient "
                      "in exact arithmetic: left out")
            a, b = ours[counted], want[counted]
            err = np.linalg.norm(a - b) / np.linalg.norm(b)  # relative Frobenius error
            check(err <= tolerance, f"{label}parameter {init_name}: relative error {err:.1e}", quiet)
