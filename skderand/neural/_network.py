"""A smooth multilayer perceptron with exact gradients and Hessian-vector products.

The network is ``x -> W_0 x + b_0 -> act -> ... -> act -> W_L a + b_L`` (linear
output) and the objective is

    sum_i w_i loss(net(x_i), y_i)
    + alpha * ||W_0||_F^2 + alpha_other * sum_{l >= 1} ||W_l||_F^2,

(``w_i = 1 / n`` unless weights are given), with no penalty on the biases: the
derandomization lemma needs them free.

Everything is full-batch and vectorized: one forward pass is one matrix product
per layer, the gradient is backpropagation and the Hessian-vector product is the
R-operator (Pearlmutter 1994), i.e. forward-mode differentiation of the backward
pass, at about twice the cost of a gradient. The forward and backward quantities
at the last point are cached, because Lanczos asks for many Hessian-vector
products at one point.
"""

import numpy as np
from scipy.special import expit, ndtr

__all__ = []

_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


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
            act = np.tanh(z)
            return act, 1.0 - act**2

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
    """Return ``f(out, y) -> (losses, dL/dout, hvp)``, all elementwise.

    ``hvp(r)`` is the second derivative of the loss with respect to the output,
    applied row by row to the direction ``r`` (the Gauss-Newton block).
    """
    if name == "squared_error":

        def f(out, y):
            res = out - y
            return 0.5 * res**2, res, lambda r: r

    elif name == "pseudo_huber":
        d = float(delta)

        def f(out, y):
            res = out - y
            root = np.sqrt(1.0 + (res / d) ** 2)
            curv = root**-3
            return d**2 * (root - 1.0), res / root, lambda r: curv * r

    elif name == "binary_log_loss":
        # One logit per sample, y in {0, 1}: softplus(o) - y * o.
        def f(out, y):
            p = expit(out)
            value = np.logaddexp(0.0, out) - y * out
            curv = p * (1.0 - p)
            return value, p - y, lambda r: curv * r

    elif name == "log_loss":
        # Softmax cross-entropy, y one-hot.
        def f(out, y):
            shifted = out - out.max(axis=1, keepdims=True)
            log_norm = np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
            log_p = shifted - log_norm
            p = np.exp(log_p)
            value = -y * log_p

            def hvp(r):
                return p * (r - np.sum(p * r, axis=1, keepdims=True))

            return value, p - y, hvp

    else:  # pragma: no cover - validated by the estimators
        raise ValueError(f"Unknown loss {name!r}.")
    return f


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
        self.loss = _loss(loss, huber_delta)
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

    def _evaluate(self, theta, X, Y):
        """Forward and backward pass; cached for Hessian-vector products at theta."""
        if self._cache_key is not None and np.array_equal(theta, self._cache_key):
            return self._cache
        n = X.shape[0]
        weights, biases = self.unpack(theta)
        # Products in X's type; the decay terms and the result in float64.
        weights_x, biases_x = self._in_dtype_of(X, weights, biases)
        inputs, zs, d1s = [X], [], []
        a = X
        for layer, (weight, bias) in enumerate(zip(weights_x, biases_x, strict=True)):
            z = a @ weight.T + bias
            if layer == self.n_layers - 1:
                out = z
            else:
                a, d1 = self.act(z)
                inputs.append(a)
                zs.append(z)
                d1s.append(d1)
        losses, dout, loss_hvp = self.loss(out, Y)
        if self.sample_weight is None:
            scale = 1.0 / n
            value = float(np.sum(losses, dtype=np.float64)) * scale
        else:
            scale = self.sample_weight[:, None]
            value = float(np.sum(losses * scale, dtype=np.float64))
        grad_out = dout * scale
        # Backward pass: gradients of the pre-activations, layer by layer.
        grad_z = [None] * self.n_layers
        grad_a = [None] * self.n_layers  # gradient w.r.t. the input of layer l
        grad_z[-1] = grad_out
        for layer in range(self.n_layers - 1, -1, -1):
            if layer > 0:
                grad_a[layer] = grad_z[layer] @ weights_x[layer]
                grad_z[layer - 1] = grad_a[layer] * d1s[layer - 1]
        grad = np.empty(self.n_params)
        for layer, (w, b, _) in enumerate(self.slices):
            weight = weights[layer]
            value += self.decay[layer] * np.sum(weight**2)
            gw = grad_z[layer].T @ inputs[layer] + 2.0 * self.decay[layer] * weight
            grad[w] = gw.reshape(-1)
            if b is not None:
                grad[b] = grad_z[layer].sum(axis=0)
        self._cache_key = np.array(theta, copy=True)
        self._cache = (
            value,
            grad,
            weights,
            inputs,
            zs,
            d1s,
            [],  # second derivatives, filled by the first hessp at this point
            grad_z,
            grad_a,
            loss_hvp,
            scale,
        )
        return self._cache

    def set_first_decay(self, alpha):
        """Change the first-layer decay; the cached evaluation no longer holds."""
        self.decay[0] = alpha
        self._cache_key = None

    def loss_grad(self, theta, X, Y):
        """Objective value and its gradient at ``theta``."""
        value, grad = self._evaluate(theta, X, Y)[:2]
        return value, grad.copy()

    def hessp(self, theta, v, X, Y):
        """Exact Hessian of the objective at ``theta`` times ``v`` (R-operator)."""
        (_, _, weights, inputs, zs, d1s, d2s, grad_z, grad_a, loss_hvp, scale) = (
            self._evaluate(theta, X, Y)
        )
        if not d2s:
            d2s.extend(
                self.act2(z, a, d1)
                for z, a, d1 in zip(zs, inputs[1:], d1s, strict=True)
            )
        v_weights, v_biases = self.unpack(np.asarray(v, dtype=np.float64))
        # Forward sweep of directional derivatives R{z_l}, R{a_l}.
        r_inputs = [None]  # R{input of layer 0} = 0
        r_z = []
        for layer in range(self.n_layers):
            rz = inputs[layer] @ v_weights[layer].T + v_biases[layer]
            if layer > 0:
                rz += r_inputs[layer] @ weights[layer].T
            r_z.append(rz)
            if layer < self.n_layers - 1:
                r_inputs.append(d1s[layer] * rz)
        # Backward sweep of R{grad_z_l}.
        r_grad_z = [None] * self.n_layers
        r_grad_z[-1] = loss_hvp(r_z[-1]) * scale
        for layer in range(self.n_layers - 1, 0, -1):
            r_grad_a = (
                r_grad_z[layer] @ weights[layer] + grad_z[layer] @ v_weights[layer]
            )
            r_grad_z[layer - 1] = (
                r_grad_a * d1s[layer - 1]
                + grad_a[layer] * d2s[layer - 1] * r_z[layer - 1]
            )
        hv = np.empty(self.n_params)
        for layer, (w, b, _) in enumerate(self.slices):
            hw = r_grad_z[layer].T @ inputs[layer]
            if layer > 0:
                hw += grad_z[layer].T @ r_inputs[layer]
            hw += 2.0 * self.decay[layer] * v_weights[layer]
            hv[w] = hw.reshape(-1)
            if b is not None:
                hv[b] = r_grad_z[layer].sum(axis=0)
        return hv
