"""``einsum``: Einstein summation as one graph node.

An equation such as ``"bij,bjk->bik"`` names every axis of every operand with a
letter. Letters shared by operands are multiplied along together; letters
missing from the output (after ``->``) are summed over::

    out[b, i, k] = Σ_j A[b, i, j] · B[b, j, k]

The rules are PyTorch's (and NumPy's): without ``->`` the output is the
letters used exactly once, in alphabetical order (upper case first); ``...``
stands for the axes no letter names, broadcast between operands as NumPy
broadcasts and put first in an implicit output (summed when an explicit output
has no ``...``); a letter repeated within one operand takes a diagonal
(``"ii->i"``); an axis of size 1 broadcasts against the same letter's size
elsewhere.

The forward is NumPy's (or CuPy's) ``einsum`` with ``optimize=True``, which
picks an order of pairwise contractions. The backward is einsum again: the
output is linear in each operand, so with ``out = einsum(A, B, C)`` the
gradient of A is the output gradient contracted with the *other* operands,
onto A's letters::

    dA[i, j] = Σ_{k,…} dOut[i, k] · B[j, k] · …      (einsum "ik,jk->ij")

Two of A's letters cannot come out of that einsum and are put back by hand:
a letter that only A has (A was summed over it, so every element along it
gets the same gradient: broadcast), and a repeated letter (A was read only on
its diagonal, so the gradient is zero off it: write into a zero array through
a strided diagonal view). An axis of size 1 that broadcast was dropped before
the product; its gradient is the sum the product already did.
"""
from __future__ import annotations

import numbers
import string

from ..autograd import Function
from ..backend import get_array_module
from ..tensor import Tensor

__all__ = ["einsum"]

LETTERS = string.ascii_uppercase + string.ascii_lowercase   # PyTorch's order: A-Z, a-z
ELLIPSIS = "..."


def _parse_term(equation, start, end, what):
    """The letters (and at most one ``...``) of equation[start:end]; spaces ignored."""
    items, position = [], start
    while position < end:
        char = equation[position]
        if char.isspace():
            position += 1
        elif char == ".":
            if equation[position:position + 3] != ELLIPSIS or position + 3 > end:
                raise ValueError(f"einsum: '.' at index {position} of {equation!r} is not "
                                 f"part of an ellipsis '...' ({what})")
            if ELLIPSIS in items:
                raise ValueError(f"einsum: {what} has more than one ellipsis '...' in "
                                 f"{equation!r}")
            items.append(ELLIPSIS)
            position += 3
        elif char in LETTERS:
            items.append(char)
            position += 1
        else:
            raise ValueError(f"einsum: invalid character {char!r} at index {position} of "
                             f"{equation!r}: subscripts must be letters a-z, A-Z, '...', "
                             "',' between operands and '->' before the output")
    return items


def _split(equation):
    """Operand terms and the output term (None when implicit) of ``equation``."""
    arrow = equation.find("->")
    lhs_end = len(equation) if arrow < 0 else arrow
    terms, start = [], 0
    for index in range(lhs_end + 1):
        if index == lhs_end or equation[index] == ",":
            terms.append(_parse_term(equation, start, index, f"operand {len(terms)}"))
            start = index + 1
    output = None if arrow < 0 else _parse_term(equation, arrow + 2, len(equation), "output")
    return terms, output


def _sublist_equation(args):
    """torch's other form, ``einsum(a, [0, 1], b, [1, 2], [0, 2])``, as an equation."""
    output = None
    if len(args) % 2:                       # an odd count ends with the output sublist
        output, args = args[-1], args[:-1]
    operands, terms = args[0::2], args[1::2]

    def letters(sublist):
        if not isinstance(sublist, (list, tuple)):
            raise ValueError(f"einsum: expected a list of subscripts, got {sublist!r}")
        out = []
        for s in sublist:
            if s is Ellipsis:
                out.append(ELLIPSIS)
            elif isinstance(s, numbers.Integral) and 0 <= s < len(LETTERS):
                out.append(LETTERS[s])
            else:
                raise ValueError(f"einsum: subscripts in a sublist must be integers in "
                                 f"[0, {len(LETTERS)}) or Ellipsis, got {s!r}")
        return "".join(out)

    equation = ",".join(letters(t) for t in terms)
    if output is not None:
        equation += "->" + letters(output)
    return equation, operands


def _plan(equation, shapes):
    """Check ``equation`` against the operands' shapes; return the plan of the product.

    The plan: per operand, its letters (``...`` replaced by letters of its own,
    broadcast axes of size 1 left out) and the axes kept; the output's letters;
    every letter's size.
    """
    terms, output = _split(equation)
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: the equation {equation!r} has {len(terms)} operand(s) "
                         f"but {len(shapes)} were given")
    ellipsis_dims = []
    for i, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        named = sum(item != ELLIPSIS for item in term)
        if ELLIPSIS in term:
            if named > len(shape):
                raise ValueError(f"einsum: operand {i} has {len(shape)} dimension(s) but "
                                 f"its subscripts name {named} besides the ellipsis")
            ellipsis_dims.append(len(shape) - named)
        else:
            if named != len(shape):
                raise ValueError(f"einsum: operand {i} has {len(shape)} dimension(s) but "
                                 f"its subscripts {''.join(term)!r} name {named} and no "
                                 "ellipsis was given")
            ellipsis_dims.append(0)
    used = {item for term in terms for item in term if item != ELLIPSIS}
    if output is not None:
        for letter in output:
            if letter != ELLIPSIS and letter not in used:
                raise ValueError(f"einsum: output subscript {letter!r} does not appear in "
                                 "the subscripts of any operand")
            if letter != ELLIPSIS and output.count(letter) > 1:
                raise ValueError(f"einsum: output subscript {letter!r} appears more than "
                                 "once in the output")
    broadcast = max(ellipsis_dims, default=0)
    fresh = [c for c in LETTERS if c not in used][:broadcast]
    if len(fresh) < broadcast:
        raise ValueError(f"einsum: too many dimensions: {len(used)} subscripts and "
                         f"{broadcast} ellipsis dimensions exceed the {len(LETTERS)} letters")

    def expand(term, dims):
        return "".join("".join(fresh[broadcast - dims:]) if item == ELLIPSIS else item
                       for item in term)

    letters = [expand(term, dims) for term, dims in zip(terms, ellipsis_dims, strict=True)]
    if output is None:
        counts = {}
        for term in letters:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        out = "".join(fresh) + "".join(sorted((c for c in used if counts[c] == 1),
                                              key=LETTERS.index))
    else:
        out = expand(output, broadcast)

    def describe(letter):
        if letter in fresh:
            # broadcasting aligns the ellipses on the right: count from there
            return (f"dimension {fresh.index(letter) - broadcast} (from the right) of the "
                    "ellipsis '...'")
        return f"subscript {letter!r}"

    sizes, seen = {}, {}
    own = []                                    # per operand: {letter: size}
    for i, (term, shape) in enumerate(zip(letters, shapes, strict=True)):
        mine = {}
        for letter, size in zip(term, shape, strict=True):
            if letter in mine and mine[letter] != size:
                raise ValueError(f"einsum: {describe(letter)} is repeated in operand {i} "
                                 f"with sizes {mine[letter]} and {size}: a diagonal needs "
                                 "equal sizes")
            mine[letter] = size
        own.append(mine)
        for letter, size in mine.items():
            if size == 1:
                sizes.setdefault(letter, 1)
            elif sizes.get(letter, 1) == 1:
                sizes[letter], seen[letter] = size, i
            elif sizes[letter] != size:
                raise ValueError(f"einsum: {describe(letter)} has size {sizes[letter]} in "
                                 f"operand {seen[letter]} and size {size} in operand {i}, "
                                 "which do not broadcast")
    # an axis of size 1 against a larger size of its letter: broadcast, so left out
    kept = []
    for i, term in enumerate(letters):
        axes = tuple(a for a, c in enumerate(term) if own[i][c] == sizes[c])
        kept.append(axes)
        letters[i] = "".join(term[a] for a in axes)
    return tuple(letters), out, tuple(kept), sizes


def _diagonal_view(xp, array, letters):
    """A writeable view of ``array`` with one axis per distinct letter (its diagonal
    where a letter repeats): the axis strides of a repeated letter add up."""
    unique = list(dict.fromkeys(letters))
    strides = [sum(s for c, s in zip(letters, array.strides, strict=True) if c == u)
               for u in unique]
    shape = [array.shape[letters.index(u)] for u in unique]
    return xp.lib.stride_tricks.as_strided(array, shape=shape, strides=strides)


class EinsumFunction(Function):
    """``xp.einsum`` of the operands under a plan made by :func:`einsum`."""

    @staticmethod
    def forward(ctx, *arrays, letters, out, kept):
        xp = get_array_module(*arrays)
        squeezed = [a if len(axes) == a.ndim else a.reshape([a.shape[k] for k in axes])
                    for a, axes in zip(arrays, kept, strict=True)]
        equation = ",".join(letters) + "->" + out
        result = xp.asarray(xp.einsum(equation, *squeezed, optimize=True))
        if any(xp.may_share_memory(result, a) for a in arrays):
            result = result.copy()      # einsum returns views (transposes, diagonals)
        ctx.save_for_backward(*squeezed)
        ctx.meta = (letters, out, [a.shape for a in arrays])
        return result

    @staticmethod
    def backward(ctx, grad):
        squeezed = ctx.saved
        letters, out, shapes = ctx.meta
        xp = get_array_module(grad, *squeezed)
        grads = []
        for i, mine in enumerate(letters):
            if not ctx.needs_input_grad(i):
                grads.append(None)
                continue
            others = [t for j, t in enumerate(letters) if j != i]
            reachable = set(out).union(*others)
            unique = "".join(dict.fromkeys(mine))
            target = "".join(c for c in unique if c in reachable)
            equation = ",".join([out] + others) + "->" + target
            g = xp.einsum(equation, grad, *(a for j, a in enumerate(squeezed) if j != i),
                          optimize=True)
            g = xp.asarray(g)
            if target != unique:                # letters summed in this operand only
                sizes = {c: n for c, n in zip(mine, squeezed[i].shape, strict=True)}
                g = g.reshape([sizes[c] if c in target else 1 for c in unique])
                g = xp.broadcast_to(g, [sizes[c] for c in unique])
            if unique != mine:                  # a repeated letter: a diagonal
                full = xp.zeros(squeezed[i].shape, dtype=g.dtype)
                _diagonal_view(xp, full, mine)[...] = g
                g = full
            grads.append(g.reshape(shapes[i]))
        return tuple(grads)


def einsum(equation, *operands):
    """Einstein summation, as ``torch.einsum`` (see the module docstring).

    ``einsum("ij,jk->ik", a, b)`` is ``a @ b``; the operands may also come as one
    list, ``einsum("ij,jk", [a, b])``, or in torch's sublist form,
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])``. Bad equations raise ValueError
    naming the problem.
    """
    if not isinstance(equation, str):
        equation, operands = _sublist_equation((equation,) + operands)
    elif len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum: expected at least one operand after the equation")
    for i, x in enumerate(operands):
        if not (isinstance(x, Tensor) or hasattr(x, "__array_interface__")
                or hasattr(x, "__cuda_array_interface__")):
            raise TypeError(f"einsum: operand {i} must be a Tensor, got "
                            f"{type(x).__name__}")
    letters, out, kept, _ = _plan(equation, [tuple(x.shape) for x in operands])
    return EinsumFunction.apply(*operands, letters=letters, out=out, kept=kept)
