"""make_onnx.py -- small ONNX files for tests/test_onnx.c, made with onnx.helper.

    /usr/bin/python3 tests/support/make_onnx.py OUTDIR
        writes every small model below into OUTDIR/NAME.onnx
    /usr/bin/python3 tests/support/make_onnx.py --torchvision OUTDIR NAME...
        exports torchvision's NAME (random weights, seed 0, eval mode, batch 1,
        3x224x224, opset 13) to OUTDIR/NAME.onnx; exits 77 without torch
    /usr/bin/python3 tests/support/make_onnx.py --torchvision-reference OUTDIR NAME...
        the same, and PyTorch's own run of it: OUTDIR/NAME.input.bin (the
        input, uniform in [-1, 1) from seed 1, raw float32) and
        OUTDIR/NAME.output.bin (the eager module's output on it)

Run it with Debian's interpreter (/usr/bin/python3): python3-onnx and
python3-torch are Debian packages. Weights follow small formulas that
test_onnx.c repeats to check the import's arithmetic (batch-norm folding).
"""
import math
import os
import sys


def conv_weight(shape):
    """W[i] = 0.01 * (i % 17) - 0.07 over the flattened tensor."""
    n = math.prod(shape)
    return [0.01 * (i % 17) - 0.07 for i in range(n)]


def small_models():
    from onnx import TensorProto, helper

    def tensor(name, shape, values=None):
        vals = values if values is not None else conv_weight(shape)
        return helper.make_tensor(name, TensorProto.FLOAT, shape, vals)

    def ints(name, values):
        return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)

    def model(nodes, inits, in_shape, out_shape, opset=13, inputs=None):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)
        g = helper.make_graph(nodes, "net", [x] + (inputs or []), [y], initializer=inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m

    out = {}
    # conv + bias -> batch-norm -> relu: folded into one conv node
    c = 4
    bn = [tensor("w", [c, 3, 3, 3]),
          tensor("b", [c], [0.1 * i - 0.15 for i in range(c)]),
          tensor("scale", [c], [0.5 + 0.25 * i for i in range(c)]),
          tensor("beta", [c], [-0.2 + 0.1 * i for i in range(c)]),
          tensor("mean", [c], [0.05 * i for i in range(c)]),
          tensor("var", [c], [0.3 + 0.2 * i for i in range(c)])]
    out["bn_fold"] = model([
        helper.make_node("Conv", ["x", "w", "b"], ["c1"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "scale", "beta", "mean", "var"], ["n1"],
                         name="bn", epsilon=1e-3),
        helper.make_node("Relu", ["n1"], ["y"], name="relu"),
    ], bn, [1, 3, 11, 9], [1, c, 11, 9])

    # a residual whose producer comes after the conv it joins, in file order:
    # conv_a -> conv_b ; conv_down (later in the file) ; add(b, down) ; relu
    out["residual"] = model([
        helper.make_node("Conv", ["x", "wa"], ["a"], name="conv_a", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["ar"], name="relu_a"),
        helper.make_node("Conv", ["ar", "wb"], ["b"], name="conv_b", pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "wd"], ["d"], name="conv_down"),
        helper.make_node("Add", ["b", "d"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["y"], name="relu_out"),
    ], [tensor("wa", [6, 5, 3, 3]), tensor("wb", [6, 6, 3, 3]), tensor("wd", [6, 5, 1, 1])],
        [1, 5, 9, 7], [1, 6, 9, 7])

    # the other operators: depthwise (multiplier 2) + Clip as ReLU6, MaxPool
    # with ceil_mode, a fire module's Concat, AveragePool, Identity, Dropout,
    # Reshape, MatMul + Add bias, Gemm with alpha, beta and transB = 0
    out["ops"] = model([
        helper.make_node("Conv", ["x", "wdw"], ["dw"], name="dw", group=8, strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Constant", [], ["six"], name="six_c", value=tensor("six_v", [], [6.0])),
        helper.make_node("Clip", ["dw", "zero", "six"], ["dwr"], name="relu6"),
        helper.make_node("MaxPool", ["dwr"], ["mp"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
                         ceil_mode=1),
        helper.make_node("Conv", ["mp", "we1"], ["e1"], name="expand1x1"),
        helper.make_node("Relu", ["e1"], ["e1r"], name="relu_e1"),
        helper.make_node("Conv", ["mp", "we3"], ["e3"], name="expand3x3", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["e3"], ["e3r"], name="relu_e3"),
        helper.make_node("Concat", ["e1r", "e3r"], ["cat"], name="cat", axis=1),
        helper.make_node("AveragePool", ["cat"], ["ap"], name="avg", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Identity", ["ap"], ["ap2"], name="ident"),
        helper.make_node("Dropout", ["ap2"], ["ap3"], name="drop"),
        helper.make_node("Reshape", ["ap3", "shape"], ["flat"], name="reshape"),
        helper.make_node("MatMul", ["flat", "wm"], ["mm"], name="matmul"),
        helper.make_node("Add", ["mm", "bm"], ["mmb"], name="bias_add"),
        helper.make_node("Relu", ["mmb"], ["mmr"], name="relu_mm"),
        helper.make_node("Gemm", ["mmr", "wg", "bg"], ["y"], name="gemm", alpha=0.5, beta=2.0),
    ], [tensor("wdw", [16, 1, 3, 3]), tensor("zero", [], [0.0]), tensor("we1", [6, 16, 1, 1]),
        tensor("we3", [6, 16, 3, 3]), ints("shape", [1, -1]), tensor("wm", [48, 10]),
        tensor("bm", [10], [0.01 * i for i in range(10)]), tensor("wg", [10, 3]),
        tensor("bg", [3], [1.0, 2.0, 3.0])],
        [1, 8, 15, 15], [1, 3])

    # auto_pad: SAME_UPPER on a 3x3 conv pads 1 each side; on a 3x3 / 2 pool
    # of 8 it keeps ceil(8 / 2) = 4 outputs with one pad at the end
    out["same_pads"] = model([
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", auto_pad="SAME_UPPER"),
        helper.make_node("MaxPool", ["c"], ["y"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
                         auto_pad="SAME_UPPER"),
    ], [tensor("w", [4, 3, 3, 3])], [1, 3, 8, 8], [1, 4, 4, 4])

    # errors
    simple_conv = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")]
    w3 = [tensor("w", [4, 3, 3, 3])]
    out["unsupported"] = model([
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Softmax", ["c"], ["y"], name="softmax_1"),
    ], w3, [1, 3, 8, 8], [1, 4, 6, 6])
    out["cycle"] = model([
        helper.make_node("Add", ["x", "r2"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["r1"], name="relu1"),
        helper.make_node("Relu", ["r1"], ["r2"], name="relu2"),
        helper.make_node("Relu", ["r2"], ["y"], name="relu3"),
    ], [], [1, 3, 8, 8], [1, 3, 8, 8])
    out["missing_init"] = model(simple_conv, [], [1, 3, 8, 8], [1, 4, 6, 6])
    out["dynamic"] = model(simple_conv, w3, ["batch", 3, 8, 8], ["batch", 4, 6, 6])
    out["opset10"] = model(simple_conv, w3, [1, 3, 8, 8], [1, 4, 6, 6], opset=10)
    out["opset18"] = model(simple_conv, w3, [1, 3, 8, 8], [1, 4, 6, 6], opset=18)
    out["group2"] = model([helper.make_node("Conv", ["x", "w"], ["y"], name="grouped", group=2)],
                          [tensor("w", [4, 2, 3, 3])], [1, 4, 8, 8], [1, 4, 6, 6])
    out["asym_pads"] = model([helper.make_node("Conv", ["x", "w"], ["y"], name="padded", pads=[0, 0, 1, 1])],
                             w3, [1, 3, 8, 8], [1, 4, 7, 7])
    out["same_odd"] = model([helper.make_node("Conv", ["x", "w"], ["y"], name="even", auto_pad="SAME_LOWER")],
                            [tensor("w", [4, 3, 2, 2])], [1, 3, 8, 8], [1, 4, 8, 8])
    int8 = helper.make_tensor("w", TensorProto.INT8, [4, 3, 3, 3], [1] * 108)
    out["int8_weight"] = model(simple_conv, [int8], [1, 3, 8, 8], [1, 4, 6, 6])
    external = tensor("w", [4, 3, 3, 3])
    external.ClearField("float_data")
    external.data_location = TensorProto.EXTERNAL
    external.external_data.add(key="location", value="w.bin")
    out["external"] = model(simple_conv, [external], [1, 3, 8, 8], [1, 4, 6, 6])
    out["bn_alone"] = model([
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("BatchNormalization", ["r", "scale", "beta", "mean", "var"], ["y"], name="bn"),
    ], [tensor("scale", [3], [1.0] * 3), tensor("beta", [3], [0.0] * 3), tensor("mean", [3], [0.0] * 3),
        tensor("var", [3], [1.0] * 3)], [1, 3, 8, 8], [1, 3, 8, 8])
    out["clip_5"] = model([
        helper.make_node("Clip", ["x", "zero", "five"], ["y"], name="clip"),
    ], [tensor("zero", [], [0.0]), tensor("five", [], [5.0])], [1, 3, 8, 8], [1, 3, 8, 8])
    return out


def torchvision_net(torch, name, seed=0):
    """torchvision's NAME with random weights from seed, in eval mode. Its
    batch-norms get random scales, shifts and running statistics too (a
    fresh one is the identity but for eps, and would check no folding)."""
    import torchvision
    torch.manual_seed(seed)
    net = getattr(torchvision.models, name)().eval()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    return net


def torchvision_input(torch, seed=0):
    """The input the networks are checked on: uniform in [-1, 1), 1x3x224x224."""
    g = torch.Generator().manual_seed(seed + 1)
    return torch.rand(1, 3, 224, 224, generator=g) * 2 - 1


def torchvision_models(outdir, names, reference=False):
    try:
        import torch
        import torchvision  # noqa: F401
    except ImportError as e:
        print(f"make_onnx.py: {e}", file=sys.stderr)
        sys.exit(77)
    for name in names:
        net = torchvision_net(torch, name)
        x = torchvision_input(torch)
        with torch.no_grad():
            torch.onnx.export(net, x, os.path.join(outdir, name + ".onnx"), opset_version=13)
            if reference:
                x.numpy().astype("<f4").tofile(os.path.join(outdir, name + ".input.bin"))
                net(x).numpy().astype("<f4").tofile(os.path.join(outdir, name + ".output.bin"))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] in ("--torchvision", "--torchvision-reference"):
        torchvision_models(sys.argv[2], sys.argv[3:], reference=sys.argv[1].endswith("reference"))
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    import onnx
    for name, m in small_models().items():
        onnx.save(m, os.path.join(sys.argv[1], name + ".onnx"))


if __name__ == "__main__":
    main()
