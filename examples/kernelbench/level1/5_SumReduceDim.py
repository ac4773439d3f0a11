"""Sum over the middle dimension of a 3-D f32 tensor, keeping it (output (batch, 1, dim2))."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.sum(x, dim=reduce_dim, keepdim=True)."""

    def __init__(self, reduce_dim):
        super(Model, self).__init__()
        self.reduce_dim = reduce_dim

    def forward(self, x):
        return torch.sum(x, dim=self.reduce_dim, keepdim=True)


batch_size = 64
dim1 = 2048
dim2 = 512


def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [1]  # the dimension reduced
