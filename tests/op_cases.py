"""The table of differentiable ops that the gradcheck and PyTorch tests fan out over.

Each case's ``fn(lib, *tensors)`` is written once and runs unchanged with
``lib`` = tinynet or torch (the idea of tinygrad's ``helper_test_op`` and of
Chainer's FunctionTestCase): the same expression, two frameworks, compared.
"""
from dataclasses import dataclass, field

import numpy as np


@dataclass
class OpCase:
    name: str
    fn: object                      # fn(lib, *tensors) -> tensor or tuple of tensors
    shapes: tuple                   # one shape per tensor input
    domain: str = "real"            # real | positive | away_from_zero
    torch_only_values: bool = False  # outputs are (values, indices) style tuples
    kwargs: dict = field(default_factory=dict)

    def __str__(self):
        return self.name

    def inputs(self, seed=0, dtype=np.float64):
        rng = np.random.default_rng(seed)
        arrays = []
        for shape in self.shapes:
            if self.domain == "positive":
                a = rng.uniform(0.5, 2.0, shape)
            elif self.domain == "away_from_zero":
                a = rng.uniform(0.2, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
            else:
                a = rng.standard_normal(shape)
            arrays.append(np.asarray(a, dtype=dtype))
        return arrays


def first(result):
    """The differentiable part of a (values, indices) result."""
    return result[0] if isinstance(result, tuple) else result


IDX = np.array([2, 0, 2, 1])       # repeated on purpose: backward must add

CASES = [
    # arithmetic with broadcasting
    OpCase("add", lambda lib, a, b: a + b, ((3, 4), (3, 4))),
    OpCase("add_broadcast_row", lambda lib, a, b: a + b, ((3, 4), (4,))),
    OpCase("add_broadcast_both", lambda lib, a, b: a + b, ((2, 1, 4), (3, 1))),
    OpCase("add_scalar", lambda lib, a: 2.5 + a, ((3, 4),)),
    OpCase("sub_broadcast", lambda lib, a, b: a - b, ((3, 1), (1, 4))),
    OpCase("rsub_scalar", lambda lib, a: 1.0 - a, ((5,),)),
    OpCase("mul_broadcast", lambda lib, a, b: a * b, ((2, 3, 4), (3, 1))),
    OpCase("mul_scalar", lambda lib, a: a * -3.0, ((4,),)),
    OpCase("div", lambda lib, a, b: a / b, ((3, 4), (3, 4)), "away_from_zero"),
    OpCase("div_broadcast", lambda lib, a, b: a / b, ((3, 4), (4,)), "away_from_zero"),
    OpCase("rdiv_scalar", lambda lib, a: 2.0 / a, ((3, 4),), "away_from_zero"),
    OpCase("pow_scalar", lambda lib, a: a ** 3, ((3, 4),)),
    OpCase("pow_fraction", lambda lib, a: a ** 0.5, ((3, 4),), "positive"),
    OpCase("pow_tensor", lambda lib, a, b: a ** b, ((3, 4), (4,)), "positive"),
    OpCase("rpow_scalar", lambda lib, a: 2.0 ** a, ((3, 4),)),
    OpCase("neg", lambda lib, a: -a, ((3, 4),)),
    OpCase("maximum", lambda lib, a, b: lib.maximum(a, b), ((3, 4), (4,))),
    OpCase("minimum", lambda lib, a, b: lib.minimum(a, b), ((3, 4), (3, 1))),
    OpCase("where", lambda lib, a, b: lib.where(a > 0, a, b), ((3, 4), (3, 4))),
    OpCase("where_broadcast", lambda lib, a, b: lib.where(b > 0, a, b * 2), ((3, 4), (4,))),
    OpCase("clip", lambda lib, a: lib.clip(a, -0.5, 0.7), ((4, 5),)),
    OpCase("clamp_min", lambda lib, a: a.clamp(min=0.1), ((4, 5),)),
    # unary
    OpCase("exp", lambda lib, a: a.exp(), ((3, 4),)),
    OpCase("log", lambda lib, a: a.log(), ((3, 4),), "positive"),
    OpCase("sqrt", lambda lib, a: a.sqrt(), ((3, 4),), "positive"),
    OpCase("abs", lambda lib, a: a.abs(), ((3, 4),), "away_from_zero"),
    OpCase("tanh", lambda lib, a: a.tanh(), ((3, 4),)),
    OpCase("sigmoid", lambda lib, a: a.sigmoid(), ((3, 4),)),
    OpCase("relu", lambda lib, a: a.relu(), ((3, 4),), "away_from_zero"),
    # matmul
    OpCase("matmul_2d", lambda lib, a, b: a @ b, ((3, 4), (4, 5))),
    OpCase("matmul_vec_mat", lambda lib, a, b: a @ b, ((4,), (4, 5))),
    OpCase("matmul_mat_vec", lambda lib, a, b: a @ b, ((3, 4), (4,))),
    OpCase("matmul_dot", lambda lib, a, b: a @ b, ((4,), (4,))),
    OpCase("matmul_batched", lambda lib, a, b: a @ b, ((2, 3, 4), (2, 4, 5))),
    OpCase("matmul_batch_broadcast", lambda lib, a, b: lib.matmul(a, b), ((2, 1, 3, 4), (3, 4, 2))),
    OpCase("matmul_batch_vec", lambda lib, a, b: a @ b, ((2, 3, 4), (4,))),
    # reductions
    OpCase("sum_all", lambda lib, a: a.sum(), ((3, 4),)),
    OpCase("sum_dim", lambda lib, a: a.sum(dim=1), ((3, 4, 2),)),
    OpCase("sum_dims_keepdim", lambda lib, a: a.sum(dim=(0, 2), keepdim=True), ((3, 4, 2),)),
    OpCase("mean_all", lambda lib, a: a.mean(), ((3, 4),)),
    OpCase("mean_dim", lambda lib, a: a.mean(dim=-1, keepdim=True), ((3, 4),)),
    OpCase("var_unbiased", lambda lib, a: a.var(dim=1), ((3, 5),)),
    OpCase("var_biased_keepdim", lambda lib, a: a.var(dim=0, correction=0, keepdim=True),
           ((4, 3),)),
    OpCase("var_all", lambda lib, a: a.var(), ((3, 4),)),
    OpCase("std", lambda lib, a: a.std(dim=1), ((3, 5),)),
    OpCase("max_all", lambda lib, a: a.max(), ((3, 4),)),
    OpCase("max_dim", lambda lib, a: a.max(dim=1)[0], ((3, 4),)),
    OpCase("max_dim_keepdim", lambda lib, a: a.max(dim=0, keepdim=True)[0], ((3, 4),)),
    OpCase("min_all", lambda lib, a: a.min(), ((3, 4),)),
    OpCase("min_dim", lambda lib, a: a.min(dim=-1)[0], ((2, 3, 4),)),
    OpCase("logsumexp", lambda lib, a: a.logsumexp(dim=1), ((3, 5),)),
    OpCase("logsumexp_keepdim", lambda lib, a: lib.logsumexp(a * 30, dim=0, keepdim=True),
           ((3, 5),)),
    OpCase("softmax", lambda lib, a: lib.softmax(a, dim=-1), ((3, 5),)),
    OpCase("softmax_dim0", lambda lib, a: a.softmax(dim=0), ((3, 5),)),
    OpCase("log_softmax", lambda lib, a: a.log_softmax(dim=1), ((3, 5),)),
    OpCase("log_softmax_large", lambda lib, a: (a * 100).log_softmax(dim=-1), ((2, 6),)),
    # shapes
    OpCase("reshape", lambda lib, a: a.reshape(4, 3), ((3, 4),)),
    OpCase("reshape_infer", lambda lib, a: a.reshape(-1), ((3, 4),)),
    OpCase("view", lambda lib, a: a.view(2, 6), ((3, 4),)),
    OpCase("transpose", lambda lib, a: a.transpose(0, 2), ((2, 3, 4),)),
    OpCase("permute", lambda lib, a: a.permute(2, 0, 1), ((2, 3, 4),)),
    OpCase("flatten", lambda lib, a: a.flatten(1), ((2, 3, 4),)),
    OpCase("squeeze", lambda lib, a: a.squeeze(1), ((3, 1, 4),)),
    OpCase("unsqueeze", lambda lib, a: a.unsqueeze(-1), ((3, 4),)),
    OpCase("expand", lambda lib, a: a.expand(2, 3, 4), ((3, 1),)),
    OpCase("t", lambda lib, a: a.t(), ((3, 4),)),
    # indexing
    OpCase("getitem_int", lambda lib, a: a[1], ((3, 4),)),
    OpCase("getitem_slice", lambda lib, a: a[:, 1:3], ((3, 4),)),
    OpCase("getitem_step_ellipsis", lambda lib, a: a[..., ::2], ((2, 3, 4),)),
    OpCase("getitem_negative", lambda lib, a: a[-1, -2:], ((3, 4),)),
    OpCase("getitem_none", lambda lib, a: a[None, :, 1], ((3, 4),)),
    OpCase("getitem_repeated_list", lambda lib, a: a[[0, 2, 0, 0]], ((3, 4),)),
    OpCase("getitem_repeated_tensor", lambda lib, a: a[lib.tensor(IDX)], ((3, 4),)),
    OpCase("getitem_cols_repeated", lambda lib, a: a[:, [1, 1, 3]], ((3, 4),)),
    OpCase("getitem_pairs", lambda lib, a: a[[0, 1, 0], [2, 2, 2]], ((3, 4),)),
    OpCase("getitem_mask", lambda lib, a: a[a > 0], ((3, 4),)),
    # joining and splitting
    OpCase("cat", lambda lib, a, b: lib.cat([a, b], dim=0), ((2, 3), (4, 3))),
    OpCase("cat_dim1", lambda lib, a, b, c: lib.cat([a, b, c], dim=1), ((2, 1), (2, 3), (2, 2))),
    OpCase("stack", lambda lib, a, b: lib.stack([a, b], dim=1), ((2, 3), (2, 3))),
    OpCase("split", lambda lib, a: a.split(2, dim=1), ((3, 5),)),
    OpCase("split_sections", lambda lib, a: lib.split(a, [1, 3], dim=0), ((4, 2),)),
    OpCase("chunk", lambda lib, a: a.chunk(3, dim=-1), ((2, 7),)),
    # composite expressions (the engine, not one op)
    OpCase("reuse", lambda lib, a: (a * a + a).sum(dim=0) * a[0], ((3, 4),)),
    OpCase("mlp", lambda lib, x, w1, w2: ((x @ w1).relu() @ w2).log_softmax(dim=1),
           ((5, 4), (4, 6), (6, 3)), "away_from_zero"),
]

CASES += [
    OpCase("unbind", lambda lib, a: a.unbind(1), ((3, 4, 2),)),
    OpCase("unbind_partial_use", lambda lib, a: a.unbind(0)[1] * 2, ((3, 4),)),
    OpCase("split_partial_use", lambda lib, a: a.split([1, 2, 1], dim=1)[2], ((3, 4),)),
    OpCase("chunk_reuse", lambda lib, a: a.chunk(2, dim=0)[0] * a.chunk(2, dim=0)[1], ((4, 3),)),
]

INF = float("inf")

CASES += [
    OpCase("clone", lambda lib, a: a.clone() * a, ((3, 4),)),
    OpCase("repeat", lambda lib, a: a.repeat(2, 3), ((3, 4),)),
    OpCase("repeat_leading_dims", lambda lib, a: a.repeat(2, 1, 3), ((3, 1),)),
    OpCase("repeat_scalar", lambda lib, a: a.repeat(2, 3), ((),)),
    OpCase("masked_fill", lambda lib, a, b: a.masked_fill(b > 0, 2.0) * b, ((3, 4), (4,))),
    OpCase("masked_fill_tensor_value", lambda lib, a, v: a.masked_fill(a > 0, v), ((3, 4), ())),
    OpCase("masked_fill_mask_broadcasts_x",
           lambda lib, a, b: a.masked_fill(b > 0, -1.0) * b, ((4,), (3, 4))),
    OpCase("norm", lambda lib, a: a.norm(), ((3, 4),)),
    OpCase("norm_fro_dims", lambda lib, a: a.norm("fro", dim=(0, 2)), ((2, 3, 4),)),
    OpCase("norm_1_dim", lambda lib, a: a.norm(1, dim=1), ((3, 4),), "away_from_zero"),
    OpCase("norm_inf_keepdim", lambda lib, a: a.norm(INF, dim=0, keepdim=True), ((3, 4),)),
    OpCase("norm_minus_inf", lambda lib, a: a.norm(-INF, dim=-1), ((3, 4),)),
    OpCase("norm_3", lambda lib, a: a.norm(3, dim=(0, 1)), ((3, 4, 2),)),
    OpCase("norm_1_5", lambda lib, a: a.norm(1.5), ((3, 4),), "away_from_zero"),
    OpCase("norm_0_5", lambda lib, a: a.norm(0.5, dim=1), ((3, 4),), "away_from_zero"),
    OpCase("var_correction_2_dims", lambda lib, a: a.var(dim=(0, 2), correction=2), ((3, 2, 4),)),
    OpCase("std_biased_dims", lambda lib, a: a.std(dim=(1, 2), correction=0, keepdim=True),
           ((2, 3, 4),)),
    OpCase("std_unbiased_false", lambda lib, a: a.std(0, False), ((4, 3),)),
]
