"""A pre-norm transformer MLP block: x + fc2(gelu_tanh(fc1(layernorm(x)))), f32."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """LayerNorm(hidden) -> Linear(hidden, ffn) -> GELU (tanh) -> Linear(ffn, hidden) -> + x."""

    def __init__(self, hidden, ffn):
        super(Model, self).__init__()
        self.norm = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)

    def forward(self, x):
        h = F.gelu(self.fc1(self.norm(x)), approximate="tanh")
        return x + self.fc2(h)


tokens = 1024
hidden = 384
ffn = 1536


def get_inputs():
    x = torch.randn(tokens, hidden)
    return [x]


def get_init_inputs():
    return [hidden, ffn]
