#!/usr/bin/env python3
"""Fits the rational erf of kernels/activation.cl and measures its fp32 error.

erf(x) ~ x P(x^2) / Q(x^2) on 0 <= x <= C (Q's constant term 1), by weighted least squares on
the linearized residual x P - erf Q, reweighted each round by 1/|Q| and by the square root of
the last error (Lawson's iteration towards the minimax fit). Then the code's fp32 evaluation
(Horner with FMA, |x| clamped to C, the result clamped to 1) is emulated over [-6, 6] with the
coefficients rounded to float, and its largest absolute error printed.

Needs numpy and scipy; the library's build never runs it:  python3 tools/fit_erf.py
"""
import numpy as np
from scipy.special import erf

C = 3.9
NP, NQ = 6, 5  # coefficients of P; of Q past its constant 1


def fit(iters=200):
    x = np.linspace(0.0, C, 20000)
    t, f = x * x, erf(x)
    w, q = np.ones_like(x), np.ones_like(x)
    for _ in range(iters):
        a = np.hstack([x[:, None] * t[:, None] ** np.arange(NP),
                       -f[:, None] * t[:, None] ** np.arange(1, NQ + 1)])
        wq = w / np.abs(q)
        sol, *_ = np.linalg.lstsq(a * wq[:, None], f * wq, rcond=None)
        p_c, q_c = sol[:NP], np.concatenate([[1.0], sol[NP:]])
        q = np.polyval(q_c[::-1], t)
        err = x * np.polyval(p_c[::-1], t) / q - f
        w = w * np.abs(err) ** 0.5 + 1e-30
        w /= w.max()
    return p_c, q_c, np.max(np.abs(err))


def fma32(a, b, c):  # the product of two floats is exact in double
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def horner32(coef, t):
    acc = np.full_like(t, coef[-1])
    for k in range(len(coef) - 2, -1, -1):
        acc = fma32(acc, t, np.full_like(t, coef[k]))
    return acc


def main():
    p_c, q_c, e = fit()
    pf, qf = p_c.astype(np.float32), q_c.astype(np.float32)
    xs = np.linspace(-6.0, 6.0, 2000001).astype(np.float32)
    a = np.minimum(np.abs(xs), np.float32(C))
    t = (a * a).astype(np.float32)
    r = np.minimum(((a * horner32(pf, t)).astype(np.float32) / horner32(qf, t)).astype(np.float32),
                   np.float32(1.0))
    r = np.copysign(r, xs)
    err = np.abs(r.astype(np.float64) - erf(xs.astype(np.float64)))
    print("fit: max |error| %.3g on [0, %g]; erf(%g) = 1 - %.3g" % (e, C, C, 1.0 - erf(C)))
    print("fp32: max |error| %.3g at x = %g" % (err.max(), xs[err.argmax()]))
    print("P:", ", ".join("%.9ef" % v for v in pf))
    print("Q:", ", ".join("%.9ef" % v for v in qf))


if __name__ == "__main__":
    main()
