"""Teaching counterparts built from primitive ops, used to check the fused ones."""
import tinynet


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


__all__ = ["composite_layer_norm", "normalize_over_time", "composite_batch_norm_train", "tinynet"]
