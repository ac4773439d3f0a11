"""Linear layer (x @ W^T + b) followed by ReLU, f32."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(linear(x)) with nn.Linear(in_features, out_features)."""

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


batch_size = 512
in_features = 1024
out_features = 2048


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
