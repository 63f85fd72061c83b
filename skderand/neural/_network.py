"""A smooth multilayer perceptron with exact gradients and Hessian-vector products.

The network is ``x -> W_0 x + b_0 -> act -> ... -> act -> W_L a + b_L`` (linear
output) and the objective is

    sum_i w_i loss(net(x_i), y_i)
    + alpha * ||W_0||_F^2 + alpha_other * sum_{l >= 1} ||W_l||_F^2,

(``w_i = 1 / n`` unless weights are given), with no penalty on the biases: the
derandomization lemma needs them free.

Everything is full-batch: the gradient is backpropagation and the
Hessian-vector product is the R-operator (Pearlmutter 1994), i.e. forward-mode
differentiation of the backward pass, at about twice the cost of a gradient.
Both sum over blocks of rows small enough that each block's temporaries stay in
cache. The forward and backward quantities of every row at the last point are
kept when Hessian-vector products ask for them, because Lanczos asks for many
at one point.
"""

import numpy as np
from scipy.special import expit, ndtr

__all__ = []

_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)
# Values in one block's temporary (rows x layer width): 256 KiB in float32,
# within a core's L2 cache, where the elementwise passes of the forward and
# backward sweeps run faster than over arrays of all the rows (see
# doc/developers/structure_discovery_scale.rst, "Row blocks").
_BLOCK_VALUES = 2**16


def _activation(name, softplus_sharpness):
    """Return ``(f, f2)``: ``f(z) -> (act, d1)`` and ``f2(z, act, d1) -> d2``.

    The second derivative is only needed for Hessian-vector products, so it is
    computed from the cached first-order quantities on demand.
    """
    if name == "softplus":
        s = float(softplus_sharpness)

        def f(z):
            sz = s * z
            # logaddexp(0, t) is the overflow-free log(1 + e^t).
            return np.logaddexp(0.0, sz) / s, expit(sz)

        def f2(z, act, d1):
            return s * d1 * (1.0 - d1)

    elif name == "tanh":

        def f(z):
            # 1 - 2 / (e^{2z} + 1): numpy's exponential is vectorized where its
            # tanh is not (about half the time). Past |z| = 20 the result rounds
            # to +-1 in double precision; the clip keeps e^{2z} finite and away
            # from underflow.
            act = np.clip(z, -20.0, 20.0)
            act *= 2.0
            np.exp(act, out=act)
            act += 1.0
            np.divide(-2.0, act, out=act)
            act += 1.0
            d1 = act * act
            np.subtract(1.0, d1, out=d1)
            return act, d1

        def f2(z, act, d1):
            return -2.0 * act * d1

    elif name == "sigmoid":

        def f(z):
            act = expit(z)
            return act, act * (1.0 - act)

        def f2(z, act, d1):
            return d1 * (1.0 - 2.0 * act)

    elif name == "gelu":

        def f(z):
            cdf = ndtr(z)
            return z * cdf, cdf + z * _INV_SQRT_2PI * np.exp(-0.5 * z**2)

        def f2(z, act, d1):
            return _INV_SQRT_2PI * np.exp(-0.5 * z**2) * (2.0 - z**2)

    else:  # pragma: no cover - validated by the estimators
        raise ValueError(f"Unknown activation {name!r}.")
    return f, f2


def _loss(name, delta):
    """Return ``(f, hvp)``, both elementwise over the samples.

    ``f(out, y) -> (losses, dL/dout, curvature)``; ``hvp(curvature, r)`` is the
    second derivative of the loss with respect to the output applied row by
    row to the direction ``r`` (the Gauss-Newton block). ``curvature`` holds
    what ``hvp`` needs of each sample (``None`` when nothing), so that the rows
    of a block can be sliced out of it.
    """
    if name == "squared_error":

        def f(out, y):
            res = out - y
            return 0.5 * res**2, res, None

        def hvp(curvature, r):
            return r

    elif name == "pseudo_huber":
        d = float(delta)

        def f(out, y):
            res = out - y
            root = np.sqrt(1.0 + (res / d) ** 2)
            return d**2 * (root - 1.0), res / root, root**-3

        def hvp(curvature, r):
            return curvature * r

    elif name == "binary_log_loss":
        # One logit per sample, y in {0, 1}: softplus(o) - y * o.
        def f(out, y):
            p = expit(out)
            value = np.logaddexp(0.0, out) - y * out
            return value, p - y, p * (1.0 - p)

        def hvp(curvature, r):
            return curvature * r

    elif name == "log_loss":
        # Softmax cross-entropy, y one-hot; the curvature is the softmax p.
        def f(out, y):
            shifted = out - out.max(axis=1, keepdims=True)
            log_norm = np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
            log_p = shifted - log_norm
            p = np.exp(log_p)
            return -y * log_p, p - y, p

        def hvp(p, r):
            return p * (r - np.sum(p * r, axis=1, keepdims=True))

    else:  # pragma: no cover - validated by the estimators
        raise ValueError(f"Unknown loss {name!r}.")
    return f, hvp


def _row_blocks(n_samples, width):
    """Slices of consecutive rows, each block's ``(rows, width)`` arrays small
    enough to stay in cache while a pass works through them."""
    size = max(_BLOCK_VALUES // max(width, 1), 1)
    return [slice(start, start + size) for start in range(0, n_samples, size)]


class _Network:
    """Flat-parameter view of a smooth MLP and its regularized empirical risk.

    Parameters
    ----------
    layer_sizes : sequence of int
        ``(n_features, hidden_1, ..., hidden_m, n_outputs)``.
    activation : {"softplus", "tanh", "sigmoid", "gelu"}
    softplus_sharpness : float
        Sharpness of the softplus.
    loss : {"squared_error", "pseudo_huber", "binary_log_loss", "log_loss"}
    alpha, alpha_other : float
        Decay on the first-layer weight and on every later weight.
    train_first_bias : bool
        When False, the first-layer bias is fixed at zero and is not a variable.
    huber_delta : float
        Scale of the pseudo-Huber loss.
    sample_weight : ndarray of shape (n_samples,) or None
        Weights of the samples in the mean loss (normalized to sum to one);
        ``None`` is the plain mean. Quadrature weights turn the empirical risk
        into an expectation computed to high accuracy: the lemma's test on the
        population risk (tests/test_network.py) uses them; the estimators do
        not take sample weights yet.

    The flat vector holds, layer after layer, ``W_l`` (row-major, shape
    ``(fan_out, fan_in)``) and then ``b_l`` (omitted for the frozen first bias).
    """

    def __init__(
        self,
        layer_sizes,
        *,
        activation="softplus",
        softplus_sharpness=1.0,
        loss="squared_error",
        alpha=1e-3,
        alpha_other=1e-3,
        train_first_bias=True,
        huber_delta=1.0,
        sample_weight=None,
    ):
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            sample_weight = sample_weight / sample_weight.sum()
        self.sample_weight = sample_weight
        self.layer_sizes = tuple(int(s) for s in layer_sizes)
        self.n_layers = len(self.layer_sizes) - 1
        self.act, self.act2 = _activation(activation, softplus_sharpness)
        self.loss, self.loss_hvp = _loss(loss, huber_delta)
        self.decay = [alpha] + [alpha_other] * (self.n_layers - 1)
        self.train_first_bias = train_first_bias
        self.slices = []
        start = 0
        for layer, (fan_in, fan_out) in enumerate(
            zip(self.layer_sizes[:-1], self.layer_sizes[1:], strict=True)
        ):
            w = slice(start, start + fan_in * fan_out)
            start = w.stop
            if layer == 0 and not train_first_bias:
                b = None
            else:
                b = slice(start, start + fan_out)
                start = b.stop
            self.slices.append((w, b, (fan_out, fan_in)))
        self.n_params = start
        self._cache_key = None
        self._cache = None

    # -- packing -----------------------------------------------------------------

    def unpack(self, theta):
        """Lists of weights ``(fan_out, fan_in)`` and biases (views into theta)."""
        weights, biases = [], []
        for w, b, shape in self.slices:
            weights.append(theta[w].reshape(shape))
            biases.append(np.zeros(shape[0]) if b is None else theta[b])
        return weights, biases

    def pack(self, weights, biases):
        theta = np.empty(self.n_params)
        for (w, b, _), weight, bias in zip(self.slices, weights, biases, strict=True):
            theta[w] = np.asarray(weight).reshape(-1)
            if b is not None:
                theta[b] = bias
        return theta

    def init(self, rng):
        """Gaussian weights of variance ``1 / fan_in``, zero biases.

        On whitened inputs each first-layer pre-activation then has unit variance.
        """
        weights, biases = [], []
        for fan_out, fan_in in (shape for _, _, shape in self.slices):
            weights.append(rng.standard_normal((fan_out, fan_in)) / np.sqrt(fan_in))
            biases.append(np.zeros(fan_out))
        return self.pack(weights, biases)

    # -- evaluation --------------------------------------------------------------

    def forward(self, theta, X):
        """Network output for inputs ``X`` of shape ``(n_samples, n_features)``."""
        weights, biases = self._in_dtype_of(X, *self.unpack(theta))
        a = X
        for layer, (weight, bias) in enumerate(zip(weights, biases, strict=True)):
            z = a @ weight.T + bias
            a = z if layer == self.n_layers - 1 else self.act(z)[0]
        return a

    @staticmethod
    def _in_dtype_of(X, weights, biases):
        """The parameters in ``X``'s floating type (float32 inputs run in float32)."""
        if X.dtype == np.float64:
            return weights, biases
        return (
            [w.astype(X.dtype) for w in weights],
            [b.astype(X.dtype) for b in biases],
        )

    def _row_weight(self, block, n_samples):
        """Each sample's weight in the mean loss, for the rows of ``block``."""
        if self.sample_weight is None:
            return 1.0 / n_samples
        return self.sample_weight[block, None]

    def _evaluate(self, theta, X, Y, *, keep_rows=False):
        """``(value, gradient, record)`` at ``theta``; the last one is cached.

        The rows go through in blocks (``_row_blocks``). With ``keep_rows`` the
        ``_RowRecord`` the Hessian-vector products need is filled on the way;
        without, it is ``None``: the gradient-only fits never read it, and
        writing it out costs a fifth of a single-precision gradient.
        """
        if self._cache_key is not None and np.array_equal(theta, self._cache_key):
            if self._cache[2] is not None or not keep_rows:
                return self._cache
        n = X.shape[0]
        weights, biases = self.unpack(theta)
        # Products in X's type; the decay terms and the result in float64.
        weights_x, biases_x = self._in_dtype_of(X, weights, biases)
        record = _RowRecord(X, self.layer_sizes) if keep_rows else None
        value = sum(
            decay * np.dot(w.ravel(), w.ravel())
            for decay, w in zip(self.decay, weights, strict=True)
        )
        grad_w = [2.0 * decay * w for decay, w in zip(self.decay, weights, strict=True)]
        grad_b = [np.zeros(w.shape[0]) for w in weights]
        for block in _row_blocks(n, max(self.layer_sizes[1:])):
            inputs, zs, d1s = [X[block]], [], []
            for layer in range(self.n_layers):
                z = inputs[-1] @ weights_x[layer].T + biases_x[layer]
                if layer == self.n_layers - 1:
                    break
                a, d1 = self.act(z)
                inputs.append(a)
                zs.append(z)
                d1s.append(d1)
            losses, dout, curvature = self.loss(z, Y[block])
            row_weight = self._row_weight(block, n)
            # Single-precision losses are summed in double before the common
            # weight scales them (scaled first, each term rounds in single).
            if self.sample_weight is None:
                value += float(losses.sum(dtype=np.float64)) * row_weight
            else:
                value += float(np.sum(losses * row_weight, dtype=np.float64))
            # Backward pass: gradients of the pre-activations, layer by layer.
            grad_out = dout * row_weight
            grad_z, grad_a = grad_out, [None] * self.n_layers
            for layer in range(self.n_layers - 1, -1, -1):
                grad_w[layer] += grad_z.T @ inputs[layer]
                grad_b[layer] += grad_z.sum(axis=0)
                if layer > 0:
                    grad_a[layer] = grad_z @ weights_x[layer]
                    grad_z = grad_a[layer] * d1s[layer - 1]
            if record is not None:
                record.store(block, inputs, zs, d1s, grad_a, grad_out, curvature)
        self._cache_key = np.array(theta, copy=True)
        self._cache = (value, self.pack(grad_w, grad_b), record)
        return self._cache

    def set_first_decay(self, alpha):
        """Change the first-layer decay; the cached evaluation no longer holds."""
        self.decay[0] = alpha
        self._cache_key = None

    def loss_grad(self, theta, X, Y):
        """Objective value and its gradient at ``theta``."""
        value, grad, _ = self._evaluate(theta, X, Y)
        return value, grad.copy()

    def hessp(self, theta, v, X, Y):
        """Exact Hessian of the objective at ``theta`` times ``v`` (R-operator).

        Row block by row block, from the ``_RowRecord`` at ``theta``; the
        activations' second derivatives are computed per block.
        """
        weights = self.unpack(theta)[0]
        record = self._evaluate(theta, X, Y, keep_rows=True)[2]
        v_weights, v_biases = self.unpack(np.asarray(v, dtype=np.float64))
        hv_w = [
            2.0 * decay * vw for decay, vw in zip(self.decay, v_weights, strict=True)
        ]
        hv_b = [np.zeros(vw.shape[0]) for vw in v_weights]
        n, last = X.shape[0], self.n_layers - 1
        for block in _row_blocks(n, max(self.layer_sizes[1:])):
            inputs, zs, d1s, grad_a, grad_z, curvature = record.rows(block)
            # Forward sweep of directional derivatives R{z_l}, R{a_l}.
            r_inputs = [None]  # R{input of layer 0} = 0
            r_z = []
            for layer in range(self.n_layers):
                rz = inputs[layer] @ v_weights[layer].T + v_biases[layer]
                if layer > 0:
                    rz += r_inputs[layer] @ weights[layer].T
                r_z.append(rz)
                if layer < last:
                    r_inputs.append(d1s[layer] * rz)
            # Backward sweep of R{grad_z_l}, with the gradient grad_z_l beside it.
            r_grad_z = self.loss_hvp(curvature, r_z[-1]) * self._row_weight(block, n)
            for layer in range(last, -1, -1):
                hv_w[layer] += r_grad_z.T @ inputs[layer]
                hv_b[layer] += r_grad_z.sum(axis=0)
                if layer == 0:
                    break
                hv_w[layer] += grad_z.T @ r_inputs[layer]
                r_grad_a = r_grad_z @ weights[layer] + grad_z @ v_weights[layer]
                d1 = d1s[layer - 1]
                d2 = self.act2(zs[layer - 1], inputs[layer], d1)
                r_grad_z = r_grad_a * d1 + grad_a[layer] * d2 * r_z[layer - 1]
                grad_z = grad_a[layer] * d1
        return self.pack(hv_w, hv_b)


class _RowRecord:
    """What the Hessian-vector products need of every row, filled block by block.

    Per hidden layer: its input, pre-activation, first derivative and the
    gradient with respect to its output (``grad_a``); then the gradient with
    respect to the network's output and the loss's curvature (``None`` when
    the loss has none).
    """

    def __init__(self, X, layer_sizes):
        n, hidden = X.shape[0], layer_sizes[1:-1]

        def rows(width):
            return np.empty((n, width), dtype=X.dtype)

        self.inputs = [X] + [rows(w) for w in hidden]
        self.zs = [rows(w) for w in hidden]
        self.d1s = [rows(w) for w in hidden]
        self.grad_a = [None] + [rows(w) for w in hidden]
        self.grad_out = rows(layer_sizes[-1])
        self.curvature = None

    def store(self, block, inputs, zs, d1s, grad_a, grad_out, curvature):
        """Write one block's quantities (lists as ``__init__`` lays them out)."""
        for full, part in zip(
            self.inputs[1:] + self.zs + self.d1s + self.grad_a[1:] + [self.grad_out],
            inputs[1:] + zs + d1s + grad_a[1:] + [grad_out],
            strict=True,
        ):
            full[block] = part
        if curvature is not None:
            if self.curvature is None:
                shape = (self.grad_out.shape[0], *curvature.shape[1:])
                self.curvature = np.empty(shape, dtype=curvature.dtype)
            self.curvature[block] = curvature

    def rows(self, block):
        """``(inputs, zs, d1s, grad_a, grad_out, curvature)`` of ``block``'s rows."""
        curvature = None if self.curvature is None else self.curvature[block]
        return (
            [a[block] for a in self.inputs],
            [z[block] for z in self.zs],
            [d1[block] for d1 in self.d1s],
            [None] + [g[block] for g in self.grad_a[1:]],
            self.grad_out[block],
            curvature,
        )
