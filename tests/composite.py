"""Teaching counterparts built from primitive ops, used to check the fused ones."""
__all__ = ["composite_layer_norm", "normalize_over_time", "composite_batch_norm_train",
           "composite_lstm_cell", "composite_attention"]


def composite_layer_norm(x, weight, bias, eps=1e-5):
    """LayerNorm over the last axis, written as the paper's Eq. (4) in primitives."""
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, correction=0, keepdim=True)
    x_hat = (x - mean) / (var + eps).sqrt()
    return x_hat * weight + bias


def normalize_over_time(x, eps=1e-5):
    """A deliberately WRONG normalization for sequences (T, B, H): the statistics
    span all time steps, so step t sees inputs from later steps."""
    mean = x.mean(dim=(0, 2), keepdim=True)
    var = x.var(dim=(0, 2), correction=0, keepdim=True)
    return (x - mean) / (var + eps).sqrt()


def composite_batch_norm_train(x, weight, bias, eps=1e-5):
    mean = x.mean(dim=0, keepdim=True)
    var = x.var(dim=0, correction=0, keepdim=True)
    return (x - mean) / (var + eps).sqrt() * weight + bias



def composite_lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, norms=None, step=0):
    """One LSTM step from primitive ops: the teaching form of nn.recurrent.lstm_cell."""
    if norms is None:
        gates = x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh
    else:
        gates = (norms.normalize("ih", x @ weight_ih.T, step)
                 + norms.normalize("hh", h @ weight_hh.T, step) + bias_ih + bias_hh)
    i, f, g, o = gates.chunk(4, dim=1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    c_read = c if norms is None else norms.normalize("cell", c, step)
    return o.sigmoid() * c_read.tanh(), c


def composite_attention(q, k, v, mask=None, scale=None):
    """softmax(scale · q kᵀ + mask) v from primitive ops (Vaswani et al., 2017, Eq. 1):
    the teaching form of F.scaled_dot_product_attention. A bool ``mask`` is True
    where a query may attend (SDPA's convention); a float one is added. Unlike the
    fused op, a query with every key masked gets NaN (softmax of −∞ only)."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale
    if mask is not None and mask.dtype == bool:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    elif mask is not None:
        scores = scores + mask
    return scores.softmax(dim=-1) @ v
