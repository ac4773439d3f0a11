"""LayerNorm over the last dimension with a learned scale and shift (f32)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.LayerNorm(dim) on (batch_size, dim). The affine parameters are drawn at construction
    (not left at 1 and 0) so that a kernel that ignores them fails the check."""

    def __init__(self, normalized_dim):
        super(Model, self).__init__()
        self.ln = nn.LayerNorm(normalized_dim, eps=1e-5)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.ln(x)


batch_size = 8192
dim = 4096


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [dim]
