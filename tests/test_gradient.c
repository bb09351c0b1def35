/* Gradient (ai.onnx.preview.training, runtime/gradient.c): for every op it
 * differentiates, on random double inputs of odd shapes with
 * broadcasting, the gradients of y (seeded with ones: those of y's sum)
 * with respect to the xs agree with central differences of the same
 * graph's y on cpu_ref, and the host backends agree; zs held constant get
 * no gradient; a node between xs and y of an op without a derivative, a
 * value y needs that is none of xs, zs and the constants, and an xs name
 * the graph lacks are refused naming them; xflowc keeps what Gradient
 * names. */
#include "proto_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMES(...) ((const char *[]){__VA_ARGS__, NULL})

enum { MAX_X = 5 };

/* A case: its inputs x0.. (double, of these shapes; positive where the
 * ops need it), the nodes computing y (built by build), and how many of
 * the inputs are xs (the rest zs). */
typedef struct gcase {
    const char *what;
    int n_in, n_xs;
    xf_shape shapes[MAX_X];
    bool positive;
    void (*build)(Onnx__GraphProto *g);
    int opset; /* 0: 17 */
} gcase;

static void add_node(Onnx__GraphProto *g, Onnx__NodeProto *n) { PUSH(g->n_node, g->node, n); }

/* A Gradient node "gradient" of y with respect to xs (n_xs, then the
 * n_zs zs), reading ins and writing outs; and a model of g at opset 17
 * with ai.onnx.preview.training. */
static void add_gradient(Onnx__GraphProto *g, const char **ins, const char **outs, int n_xs, const char *const *xs,
                         int n_zs, const char *const *zs, const char *y)
{
    Onnx__NodeProto *n = mk_node("Gradient", "gradient", ins, outs);
    n->domain = "ai.onnx.preview.training";
    attr_strings(n, "xs", n_xs, xs);
    if (n_zs > 0)
        attr_strings(n, "zs", n_zs, zs);
    attr_string(n, "y", y);
    add_node(g, n);
}

static Onnx__ModelProto *training_model(Onnx__GraphProto *g, int opset)
{
    Onnx__ModelProto *mp = mk_model(g, opset ? opset : 17);
    add_opset(mp, "ai.onnx.preview.training", 1);
    return mp;
}

static void b_binary(Onnx__GraphProto *g, const char *op)
{
    add_node(g, mk_node(op, "op", NAMES("x0", "x1"), NAMES("t")));
    add_node(g, mk_node("Tanh", "squash", NAMES("t"), NAMES("y")));
}
static void b_add(Onnx__GraphProto *g) { b_binary(g, "Add"); }
static void b_sub(Onnx__GraphProto *g) { b_binary(g, "Sub"); }
static void b_mul(Onnx__GraphProto *g) { b_binary(g, "Mul"); }
static void b_div(Onnx__GraphProto *g) { b_binary(g, "Div"); }
static void b_pow(Onnx__GraphProto *g) { b_binary(g, "Pow"); }
static void b_matmul(Onnx__GraphProto *g) { b_binary(g, "MatMul"); }

static void b_unary(Onnx__GraphProto *g)
{
    static const char *const ops[] = {"Neg", "Sigmoid", "Exp", "Sqrt", "Log", "Abs", "Relu", "Identity"};
    const char *in = "x0";
    char *names[9];
    for (int k = 0; k < 8; k++) {
        names[k] = zalloc(8);
        snprintf(names[k], 8, k == 7 ? "u" : "u%d", k);
        add_node(g, mk_node(ops[k], ops[k], (const char *[]){in, NULL}, (const char *[]){names[k], NULL}));
        in = names[k];
    }
    add_node(g, mk_node("Mul", "scale", NAMES("u", "x1"), NAMES("y")));
}

static void b_sum(Onnx__GraphProto *g)
{
    add_node(g, mk_node("Sum", "sum", NAMES("x0", "x1", "x0"), NAMES("s")));
    add_node(g, mk_node("Mul", "square", NAMES("s", "s"), NAMES("y")));
}

static void b_gemm(Onnx__GraphProto *g)
{
    Onnx__NodeProto *n = mk_node("Gemm", "gemm", NAMES("x0", "x1", "x2"), NAMES("t"));
    attr_int(n, "transA", 1);
    attr_int(n, "transB", 1);
    attr_float(n, "alpha", 0.5f);
    attr_float(n, "beta", -2);
    add_node(g, n);
    add_node(g, mk_node("Sigmoid", "squash", NAMES("t"), NAMES("y")));
}

static void b_shapes(Onnx__GraphProto *g)
{
    Onnx__NodeProto *t = mk_node("Transpose", "transpose", NAMES("x0"), NAMES("t"));
    static const int64_t perm[] = {2, 0, 1};
    attr_ints(t, "perm", 3, perm);
    add_node(g, t);
    static int64_t two[] = {2}, one[] = {1}, shape[] = {4, -1}, axes[] = {1};
    PUSH(g->n_initializer, g->initializer, mk_raw("shape", XF_DT_INT64, 1, two, shape, 16));
    add_node(g, mk_node("Reshape", "reshape", NAMES("t", "shape"), NAMES("r")));
    PUSH(g->n_initializer, g->initializer, mk_raw("axes", XF_DT_INT64, 1, one, axes, 8));
    add_node(g, mk_node("Unsqueeze", "unsqueeze", NAMES("r", "axes"), NAMES("u")));
    add_node(g, mk_node("Squeeze", "squeeze", NAMES("u", "axes"), NAMES("s")));
    Onnx__NodeProto *f = mk_node("Flatten", "flatten", NAMES("s"), NAMES("f"));
    attr_int(f, "axis", 0);
    add_node(g, f);
    add_node(g, mk_node("Mul", "mul", NAMES("f", "x1"), NAMES("m")));
    add_node(g, mk_node("Sin", "sin_of_z", NAMES("x2"), NAMES("z"))); /* zs only: no derivative needed */
    add_node(g, mk_node("Add", "add", NAMES("m", "z"), NAMES("y")));
}

static void b_reduce(Onnx__GraphProto *g)
{
    add_node(g, mk_node("Mul", "mul", NAMES("x0", "x1"), NAMES("m")));
    static int64_t two[] = {2}, axes[] = {0, -1};
    PUSH(g->n_initializer, g->initializer, mk_raw("axes", XF_DT_INT64, 1, two, axes, 16));
    Onnx__NodeProto *s = mk_node("ReduceSum", "sum", NAMES("m", "axes"), NAMES("s"));
    attr_int(s, "keepdims", 0);
    add_node(g, s);
    Onnx__NodeProto *r = mk_node("ReduceMean", "mean", NAMES("m"), NAMES("r"));
    static const int64_t mean_axes[] = {1};
    attr_ints(r, "axes", 1, mean_axes);
    add_node(g, r);
    add_node(g, mk_node("Mul", "square", NAMES("s", "s"), NAMES("q")));
    add_node(g, mk_node("Exp", "exp", NAMES("r"), NAMES("e")));
    add_node(g, mk_node("ReduceSum", "all", NAMES("e"), NAMES("a")));
    add_node(g, mk_node("Add", "add", NAMES("q", "a"), NAMES("y")));
}

static void b_softmax(Onnx__GraphProto *g)
{
    Onnx__NodeProto *s = mk_node("Softmax", "softmax", NAMES("x0"), NAMES("s"));
    attr_int(s, "axis", 1);
    add_node(g, s);
    add_node(g, mk_node("LogSoftmax", "logsoftmax", NAMES("x0"), NAMES("l")));
    add_node(g, mk_node("Mul", "ms", NAMES("s", "x1"), NAMES("a")));
    add_node(g, mk_node("Mul", "ml", NAMES("l", "x1"), NAMES("b")));
    add_node(g, mk_node("Sub", "y", NAMES("a", "b"), NAMES("y")));
}

static void b_select(Onnx__GraphProto *g)
{
    add_node(g, mk_node("Greater", "greater", NAMES("x0", "x1"), NAMES("c")));
    add_node(g, mk_node("Where", "where", NAMES("c", "x0", "x1"), NAMES("w")));
    static int64_t one[] = {1}, two[] = {2}, to[] = {2, 3};
    static const double bound[2] = {-0.5, 0.5};
    PUSH(g->n_initializer, g->initializer, mk_raw("to", XF_DT_INT64, 1, two, to, 16));
    PUSH(g->n_initializer, g->initializer, mk_raw("lo", XF_DT_DOUBLE, 0, one, bound, 8));
    PUSH(g->n_initializer, g->initializer, mk_raw("hi", XF_DT_DOUBLE, 0, one, bound + 1, 8));
    add_node(g, mk_node("Expand", "expand", NAMES("x1", "to"), NAMES("e")));
    add_node(g, mk_node("Clip", "clip", NAMES("x0", "lo", "hi"), NAMES("cl")));
    Onnx__NodeProto *l = mk_node("LeakyRelu", "leaky", NAMES("x0"), NAMES("lr"));
    attr_float(l, "alpha", 0.25f);
    add_node(g, l);
    add_node(g, mk_node("Cos", "cos", NAMES("x0"), NAMES("co")));
    add_node(g, mk_node("Erf", "erf", NAMES("co"), NAMES("er")));
    add_node(g, mk_node("Sin", "sin", NAMES("er"), NAMES("si")));
    Onnx__NodeProto *c = mk_node("Cast", "cast", NAMES("si"), NAMES("ca"));
    attr_int(c, "to", XF_DT_DOUBLE);
    add_node(g, c);
    add_node(g, mk_node("Sum", "sum", NAMES("w", "e", "cl", "lr", "ca"), NAMES("s")));
    add_node(g, mk_node("Mul", "y", NAMES("s", "s"), NAMES("y")));
}

static void b_pieces(Onnx__GraphProto *g)
{
    Onnx__NodeProto *c = mk_node("Concat", "concat", NAMES("x0", "x1"), NAMES("c"));
    attr_int(c, "axis", 1);
    add_node(g, c);
    static int64_t dims[] = {2, 2}, idx[] = {0, 4, 4, -1};
    PUSH(g->n_initializer, g->initializer, mk_raw("idx", XF_DT_INT64, 2, dims, idx, sizeof idx));
    Onnx__NodeProto *t = mk_node("Gather", "gather", NAMES("c", "idx"), NAMES("t"));
    attr_int(t, "axis", 1);
    add_node(g, t);
    add_node(g, mk_node("Mul", "sq", NAMES("t", "t"), NAMES("q")));
    /* q [2, 2, 2]: split along its last axis, the halves sliced back to
     * front (steps -1 and 2, negative starts) and added */
    Onnx__NodeProto *sp = mk_node("Split", "split", NAMES("q"), NAMES("h0", "h1"));
    attr_int(sp, "axis", -1);
    add_node(g, sp);
    static int64_t three[] = {3}, starts[] = {-1, 0, 0}, ends[] = {-3, 2, 1}, axes[] = {0, 1, 2},
                   steps[] = {-1, 2, 1};
    PUSH(g->n_initializer, g->initializer, mk_raw("starts", XF_DT_INT64, 1, three, starts, sizeof starts));
    PUSH(g->n_initializer, g->initializer, mk_raw("ends", XF_DT_INT64, 1, three, ends, sizeof ends));
    PUSH(g->n_initializer, g->initializer, mk_raw("axes", XF_DT_INT64, 1, three, axes, sizeof axes));
    PUSH(g->n_initializer, g->initializer, mk_raw("steps", XF_DT_INT64, 1, three, steps, sizeof steps));
    add_node(g, mk_node("Slice", "slice", NAMES("h0", "starts", "ends", "axes", "steps"), NAMES("s")));
    add_node(g, mk_node("Sigmoid", "sig", NAMES("h1"), NAMES("h")));
    add_node(g, mk_node("Add", "y", NAMES("s", "h"), NAMES("y")));
}

/* name = the sum of in's squares (a scalar of rank in's) */
static void square_sum(Onnx__GraphProto *g, const char *in, const char *name)
{
    char *sq = zalloc(strlen(name) + 4);
    sprintf(sq, "%s_sq", name);
    add_node(g, mk_node("Mul", sq, (const char *[]){in, in, NULL}, (const char *[]){sq, NULL}));
    Onnx__NodeProto *r = mk_node("ReduceSum", name, (const char *[]){sq, NULL}, (const char *[]){name, NULL});
    attr_int(r, "keepdims", 0);
    add_node(g, r);
}

static void b_conv(Onnx__GraphProto *g)
{
    Onnx__NodeProto *c = mk_node("Conv", "conv", NAMES("x0", "x1", "x2"), NAMES("c"));
    static const int64_t strides[] = {2, 1}, pads[] = {1, 0, 0, 1}, dil[] = {1, 2};
    attr_ints(c, "strides", 2, strides);
    attr_ints(c, "pads", 4, pads);
    attr_ints(c, "dilations", 2, dil);
    attr_int(c, "group", 2);
    add_node(g, c);
    add_node(g, mk_node("Tanh", "squash", NAMES("c"), NAMES("y")));
}

/* a 1-D Conv with SAME_LOWER padding and no bias, then Relu (which
 * sessions fuse into it) */
static void b_conv_relu(Onnx__GraphProto *g)
{
    Onnx__NodeProto *c = mk_node("Conv", "conv", NAMES("x0", "x1"), NAMES("c"));
    attr_string(c, "auto_pad", "SAME_LOWER");
    static const int64_t strides[] = {2};
    attr_ints(c, "strides", 1, strides);
    add_node(g, c);
    add_node(g, mk_node("Relu", "relu", NAMES("c"), NAMES("r")));
    add_node(g, mk_node("Mul", "y", NAMES("r", "r"), NAMES("y")));
}

static void b_pools(Onnx__GraphProto *g)
{
    static const int64_t k2[] = {2, 2}, k3[] = {3, 3}, s2[] = {2, 2}, p1[] = {1, 1, 1, 1}, p0[] = {0, 1, 1, 0};
    Onnx__NodeProto *mp = mk_node("MaxPool", "max", NAMES("x0"), NAMES("m"));
    attr_ints(mp, "kernel_shape", 2, k2);
    attr_ints(mp, "strides", 2, s2);
    attr_int(mp, "ceil_mode", 1);
    add_node(g, mp);
    Onnx__NodeProto *a = mk_node("AveragePool", "avg_pad", NAMES("x0"), NAMES("a"));
    attr_ints(a, "kernel_shape", 2, k3);
    attr_ints(a, "strides", 2, s2);
    attr_ints(a, "pads", 4, p1);
    attr_int(a, "count_include_pad", 1);
    add_node(g, a);
    Onnx__NodeProto *v = mk_node("AveragePool", "avg", NAMES("x0"), NAMES("v"));
    attr_ints(v, "kernel_shape", 2, k3);
    attr_ints(v, "pads", 4, p0);
    add_node(g, v);
    Onnx__NodeProto *l = mk_node("LpPool", "lp", NAMES("x0"), NAMES("l"));
    attr_ints(l, "kernel_shape", 2, k2);
    attr_int(l, "p", 3);
    add_node(g, l);
    add_node(g, mk_node("GlobalAveragePool", "gavg", NAMES("x0"), NAMES("ga")));
    add_node(g, mk_node("GlobalMaxPool", "gmax", NAMES("x0"), NAMES("gm")));
    add_node(g, mk_node("GlobalLpPool", "glp", NAMES("x0"), NAMES("gl")));
    static const char *const outs[] = {"m", "a", "v", "l", "ga", "gm", "gl"};
    static const char *const sums[] = {"sm", "sa", "sv", "sl", "sga", "sgm", "sgl"};
    for (int k = 0; k < 7; k++)
        square_sum(g, outs[k], sums[k]);
    add_node(g, mk_node("Sum", "y", NAMES("sm", "sa", "sv", "sl", "sga", "sgm", "sgl"), NAMES("y")));
}

static void b_batch_norm(Onnx__GraphProto *g)
{
    add_node(g, mk_node("BatchNormalization", "bn", NAMES("x0", "x1", "x2", "x3", "x4"), NAMES("n")));
    add_node(g, mk_node("Sin", "y", NAMES("n"), NAMES("y")));
}

static void b_batch_norm_training(Onnx__GraphProto *g)
{
    Onnx__NodeProto *n = mk_node("BatchNormalization", "bn", NAMES("x0", "x1", "x2", "x3", "x4"), NAMES("n"));
    attr_int(n, "training_mode", 1);
    add_node(g, n);
    add_node(g, mk_node("Sin", "y", NAMES("n"), NAMES("y")));
}

static void b_norms(Onnx__GraphProto *g)
{
    Onnx__NodeProto *l = mk_node("LayerNormalization", "ln", NAMES("x0", "x1", "x2"), NAMES("l"));
    attr_int(l, "axis", 1);
    add_node(g, l);
    add_node(g, mk_node("InstanceNormalization", "in", NAMES("x0", "x3", "x4"), NAMES("i")));
    Onnx__NodeProto *gn = mk_node("GroupNormalization", "gn", NAMES("x0", "x3", "x4"), NAMES("n"));
    attr_int(gn, "num_groups", 1);
    add_node(g, gn);
    add_node(g, mk_node("Sin", "sl", NAMES("l"), NAMES("sl")));
    add_node(g, mk_node("Mul", "mi", NAMES("i", "x0"), NAMES("mi")));
    add_node(g, mk_node("Cos", "cn", NAMES("n"), NAMES("cn")));
    add_node(g, mk_node("Sum", "y", NAMES("sl", "mi", "cn"), NAMES("y")));
}

static void b_group_norm(Onnx__GraphProto *g)
{
    Onnx__NodeProto *gn = mk_node("GroupNormalization", "gn", NAMES("x0", "x1", "x2"), NAMES("n"));
    attr_int(gn, "num_groups", 2);
    add_node(g, gn);
    add_node(g, mk_node("Sin", "y", NAMES("n"), NAMES("y")));
}

static void b_moves(Onnx__GraphProto *g)
{
    static int64_t six[] = {6}, three[] = {3}, one[] = {1};
    static int64_t reflect[] = {0, 1, 2, 0, 2, 1}, constant[] = {1, 0, 1, 0, 2, 0}, reps[] = {1, 2, 1}, k1[] = {1};
    PUSH(g->n_initializer, g->initializer, mk_raw("reflect", XF_DT_INT64, 1, six, reflect, sizeof reflect));
    PUSH(g->n_initializer, g->initializer, mk_raw("constant", XF_DT_INT64, 1, six, constant, sizeof constant));
    PUSH(g->n_initializer, g->initializer, mk_raw("reps", XF_DT_INT64, 1, three, reps, sizeof reps));
    PUSH(g->n_initializer, g->initializer, mk_raw("k", XF_DT_INT64, 1, one, k1, sizeof k1));
    Onnx__NodeProto *pr = mk_node("Pad", "pad_reflect", NAMES("x0", "reflect"), NAMES("pr"));
    attr_string(pr, "mode", "reflect");
    add_node(g, pr);
    Onnx__NodeProto *pe = mk_node("Pad", "pad_edge", NAMES("x0", "reflect"), NAMES("pe"));
    attr_string(pe, "mode", "edge");
    add_node(g, pe);
    add_node(g, mk_node("Pad", "pad_constant", NAMES("x0", "constant", "x1"), NAMES("pc")));
    add_node(g, mk_node("Tile", "tile", NAMES("x0", "reps"), NAMES("t")));
    add_node(g, mk_node("Trilu", "trilu", NAMES("x0", "k"), NAMES("u")));
    Onnx__NodeProto *d = mk_node("DepthToSpace", "d2s", NAMES("x2"), NAMES("d"));
    attr_int(d, "blocksize", 2);
    attr_string(d, "mode", "CRD");
    add_node(g, d);
    add_node(g, mk_node("Sin", "ds", NAMES("d"), NAMES("ds")));
    Onnx__NodeProto *sd = mk_node("SpaceToDepth", "s2d", NAMES("ds"), NAMES("sd"));
    attr_int(sd, "blocksize", 2);
    add_node(g, sd);
    static const char *const outs[] = {"pr", "pe", "pc", "t", "u", "sd"};
    static const char *const sums[] = {"spr", "spe", "spc", "st", "su", "ssd"};
    for (int k = 0; k < 6; k++)
        square_sum(g, outs[k], sums[k]);
    add_node(g, mk_node("Sum", "y", NAMES("spr", "spe", "spc", "st", "su", "ssd"), NAMES("y")));
}

static void b_indexing(Onnx__GraphProto *g)
{
    static int64_t d32[] = {3, 2}, d22[] = {2, 2}, d12[] = {1, 2}, d11[] = {1, 1}, four[] = {4}, three[] = {3},
                   two[] = {2};
    static int64_t ge[] = {3, 0, 1, 1, 2, 3}, gnd[] = {1, 2, 0, 3}, se[] = {2, 0}, snd[] = {1}, lens[] = {1, 2, 3, 3},
                   crop[] = {2, 5};
    static const unsigned char keep[] = {0, 1, 1};
    PUSH(g->n_initializer, g->initializer, mk_raw("ge", XF_DT_INT64, 2, d32, ge, sizeof ge));
    PUSH(g->n_initializer, g->initializer, mk_raw("gnd", XF_DT_INT64, 2, d22, gnd, sizeof gnd));
    PUSH(g->n_initializer, g->initializer, mk_raw("se", XF_DT_INT64, 2, d12, se, sizeof se));
    PUSH(g->n_initializer, g->initializer, mk_raw("snd", XF_DT_INT64, 2, d11, snd, sizeof snd));
    PUSH(g->n_initializer, g->initializer, mk_raw("lens", XF_DT_INT64, 1, four, lens, sizeof lens));
    PUSH(g->n_initializer, g->initializer, mk_raw("keep", XF_DT_BOOL, 1, three, keep, sizeof keep));
    PUSH(g->n_initializer, g->initializer, mk_raw("crop", XF_DT_INT64, 1, two, crop, sizeof crop));
    Onnx__NodeProto *a = mk_node("GatherElements", "gather_elements", NAMES("x0", "ge"), NAMES("a"));
    attr_int(a, "axis", 1);
    add_node(g, a);
    add_node(g, mk_node("GatherND", "gather_nd", NAMES("x0", "gnd"), NAMES("b")));
    add_node(g, mk_node("ScatterElements", "scatter_elements", NAMES("x0", "se", "x1"), NAMES("c")));
    add_node(g, mk_node("ScatterND", "scatter_nd", NAMES("x0", "snd", "x2"), NAMES("d")));
    Onnx__NodeProto *r = mk_node("ReverseSequence", "reverse", NAMES("x0", "lens"), NAMES("e"));
    attr_int(r, "time_axis", 0);
    attr_int(r, "batch_axis", 1);
    add_node(g, r);
    Onnx__NodeProto *c = mk_node("Compress", "compress", NAMES("x0", "keep"), NAMES("f"));
    attr_int(c, "axis", 0);
    add_node(g, c);
    add_node(g, mk_node("CenterCropPad", "crop_pad", NAMES("x0", "crop"), NAMES("h")));
    static const char *const outs[] = {"a", "b", "c", "d", "e", "f", "h"};
    static const char *const sums[] = {"sa", "sb", "sc", "sd", "se_", "sf", "sh"};
    for (int k = 0; k < 7; k++)
        square_sum(g, outs[k], sums[k]);
    add_node(g, mk_node("Sum", "y", NAMES("sa", "sb", "sc", "sd", "se_", "sf", "sh"), NAMES("y")));
}

static void b_extremes(Onnx__GraphProto *g)
{
    add_node(g, mk_node("Max", "max", NAMES("x0", "x1", "x2"), NAMES("a")));
    add_node(g, mk_node("Min", "min", NAMES("x0", "x1", "x2"), NAMES("b")));
    add_node(g, mk_node("Mean", "mean", NAMES("x0", "x1", "x2"), NAMES("c")));
    add_node(g, mk_node("PRelu", "prelu", NAMES("x0", "x1"), NAMES("d")));
    add_node(g, mk_node("Mul", "ab", NAMES("a", "b"), NAMES("ab")));
    add_node(g, mk_node("Mul", "cd", NAMES("c", "d"), NAMES("cd")));
    add_node(g, mk_node("Sub", "y", NAMES("ab", "cd"), NAMES("y")));
}

/* unary ops side by side on x0 in (-1, 1), each scaled by an element of x1 */
static void b_unary_more(Onnx__GraphProto *g)
{
    static const char *const ops[] = {"Softplus", "Softsign", "Elu",  "Selu", "Celu", "HardSigmoid", "HardSwish",
                                      "Tan",      "Atan",     "Asin", "Acos", "Sinh", "Cosh",        "Asinh",
                                      "Atanh",    "Mish",     "Gelu", "Gelu", "Swish", "ThresholdedRelu"};
    enum { N_OPS = 20 };
    char *terms[N_OPS + 3];
    for (int k = 0; k < N_OPS; k++) {
        char *u = zalloc(16), *t = zalloc(16);
        snprintf(u, 16, "u%d", k);
        snprintf(t, 16, "t%d", k);
        Onnx__NodeProto *n = mk_node(ops[k], u, NAMES("x0"), (const char *[]){u, NULL});
        if (k == 17)
            attr_string(n, "approximate", "tanh");
        if (k == 2 || k == 4 || k == 5 || k == 18 || k == 19) /* Elu, Celu, HardSigmoid, Swish, ThresholdedRelu */
            attr_float(n, "alpha", k == 4 ? 2.0f : k == 5 ? 1.0f : 0.5f);
        if (k == 5)
            attr_float(n, "beta", 0.3f); /* clipped below -0.3 and above 0.7 */
        add_node(g, n);
        add_node(g, mk_node("Mul", t, (const char *[]){u, "x1", NULL}, (const char *[]){t, NULL}));
        terms[k] = t;
    }
    static int64_t one[] = {1};
    static const double lift = 1.5;
    PUSH(g->n_initializer, g->initializer, mk_raw("lift", XF_DT_DOUBLE, 1, one, &lift, sizeof lift));
    add_node(g, mk_node("Exp", "e", NAMES("x0"), NAMES("e")));
    add_node(g, mk_node("Reciprocal", "r", NAMES("e"), NAMES("r"))); /* exp(-x) */
    add_node(g, mk_node("Add", "lifted", NAMES("e", "lift"), NAMES("l")));
    add_node(g, mk_node("Acosh", "acosh", NAMES("l"), NAMES("h")));
    terms[N_OPS] = "r";
    terms[N_OPS + 1] = "h";
    terms[N_OPS + 2] = NULL;
    add_node(g, mk_node("Sum", "y", (const char **)terms, NAMES("y")));
}

static void b_reduce_family(Onnx__GraphProto *g)
{
    static int64_t one[] = {1}, two[] = {2}, a1[] = {1}, am1[] = {-1}, a02[] = {0, 2}, a2[] = {2}, a0[] = {0},
                   a12[] = {1, 2};
    PUSH(g->n_initializer, g->initializer, mk_raw("a1", XF_DT_INT64, 1, one, a1, sizeof a1));
    PUSH(g->n_initializer, g->initializer, mk_raw("am1", XF_DT_INT64, 1, one, am1, sizeof am1));
    PUSH(g->n_initializer, g->initializer, mk_raw("a02", XF_DT_INT64, 1, two, a02, sizeof a02));
    PUSH(g->n_initializer, g->initializer, mk_raw("a2", XF_DT_INT64, 1, one, a2, sizeof a2));
    PUSH(g->n_initializer, g->initializer, mk_raw("a0", XF_DT_INT64, 1, one, a0, sizeof a0));
    PUSH(g->n_initializer, g->initializer, mk_raw("a12", XF_DT_INT64, 1, two, a12, sizeof a12));
    static const char *const ops[] = {"ReduceMax", "ReduceMin",    "ReduceProd",      "ReduceL1",
                                      "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
    static const char *const axes[] = {"a1", "am1", "a02", NULL, "a1", "a2", "a0", "a12"};
    static const char *const outs[] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"};
    static const char *const sums[] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "c0", "c1", NULL};
    add_node(g, mk_node("Exp", "e", NAMES("x0"), NAMES("e")));
    for (int k = 0; k < 8; k++) {
        const char *in = k == 5 ? "e" : "x0"; /* LogSum of positive values */
        Onnx__NodeProto *r = mk_node(ops[k], outs[k], (const char *[]){in, axes[k], NULL},
                                     (const char *[]){outs[k], NULL});
        if (!axes[k])
            r->n_input = 1;
        attr_int(r, "keepdims", k % 2);
        add_node(g, r);
        square_sum(g, outs[k], sums[k]);
    }
    Onnx__NodeProto *c = mk_node("CumSum", "cum", NAMES("x0", "a1"), NAMES("cs"));
    attr_int(c, "exclusive", 1);
    add_node(g, c);
    Onnx__NodeProto *cr = mk_node("CumSum", "cum_reverse", NAMES("x0", "am1"), NAMES("cr"));
    attr_int(cr, "reverse", 1);
    add_node(g, cr);
    square_sum(g, "cs", "c0");
    square_sum(g, "cr", "c1");
    add_node(g, mk_node("Sum", "y", (const char **)sums, NAMES("y")));
}

static void b_conv_transpose(Onnx__GraphProto *g)
{
    Onnx__NodeProto *c = mk_node("ConvTranspose", "deconv", NAMES("x0", "x1", "x2"), NAMES("c"));
    static const int64_t strides[] = {2, 1}, pads[] = {0, 1, 1, 0}, outpad[] = {1, 0}, dil[] = {1, 2};
    attr_ints(c, "strides", 2, strides);
    attr_ints(c, "pads", 4, pads);
    attr_ints(c, "output_padding", 2, outpad);
    attr_ints(c, "dilations", 2, dil);
    attr_int(c, "group", 2);
    add_node(g, c);
    add_node(g, mk_node("Tanh", "squash", NAMES("c"), NAMES("y")));
}

/* 1-D, the pads from output_shape, no bias */
static void b_conv_transpose_shape(Onnx__GraphProto *g)
{
    Onnx__NodeProto *c = mk_node("ConvTranspose", "deconv", NAMES("x0", "x1"), NAMES("c"));
    static const int64_t strides[] = {2}, shape[] = {10};
    attr_ints(c, "strides", 1, strides);
    attr_ints(c, "output_shape", 1, shape);
    add_node(g, c);
    add_node(g, mk_node("Sin", "y", NAMES("c"), NAMES("y")));
}

static void b_resize(Onnx__GraphProto *g)
{
    static int64_t four[] = {4}, eight[] = {8};
    static const float linear[] = {1, 1, 1.5f, 0.6f}, nearest[] = {1, 1, 2, 2}, crop[] = {1, 1, 1.7f, 1.3f};
    static const double roi[] = {0, 0, 0.2, -0.1, 1, 1, 0.9, 0.8};
    static const int64_t cubic[] = {1, 2, 7, 3};
    PUSH(g->n_initializer, g->initializer, mk_raw("s_linear", XF_DT_FLOAT, 1, four, linear, sizeof linear));
    PUSH(g->n_initializer, g->initializer, mk_raw("s_nearest", XF_DT_FLOAT, 1, four, nearest, sizeof nearest));
    PUSH(g->n_initializer, g->initializer, mk_raw("s_crop", XF_DT_FLOAT, 1, four, crop, sizeof crop));
    PUSH(g->n_initializer, g->initializer, mk_raw("sizes", XF_DT_INT64, 1, four, cubic, sizeof cubic));
    PUSH(g->n_initializer, g->initializer, mk_raw("roi", XF_DT_DOUBLE, 1, eight, roi, sizeof roi));
    Onnx__NodeProto *a = mk_node("Resize", "linear", NAMES("x0", "", "s_linear"), NAMES("a"));
    attr_string(a, "mode", "linear");
    attr_int(a, "antialias", 1);
    add_node(g, a);
    Onnx__NodeProto *c = mk_node("Resize", "cubic", NAMES("x0", "", "", "sizes"), NAMES("c"));
    attr_string(c, "mode", "cubic");
    attr_int(c, "exclude_outside", 1);
    attr_float(c, "cubic_coeff_a", -0.5f);
    add_node(g, c);
    Onnx__NodeProto *nn = mk_node("Resize", "nearest", NAMES("x0", "", "s_nearest"), NAMES("n"));
    attr_string(nn, "coordinate_transformation_mode", "asymmetric");
    attr_string(nn, "nearest_mode", "round_prefer_ceil");
    add_node(g, nn);
    Onnx__NodeProto *t = mk_node("Resize", "crop", NAMES("x0", "roi", "s_crop"), NAMES("t"));
    attr_string(t, "mode", "linear");
    attr_string(t, "coordinate_transformation_mode", "tf_crop_and_resize");
    attr_float(t, "extrapolation_value", 2);
    add_node(g, t);
    static const char *const outs[] = {"a", "c", "n", "t"};
    static const char *const sums[] = {"sa", "sc", "sn", "st"};
    for (int k = 0; k < 4; k++)
        square_sum(g, outs[k], sums[k]);
    add_node(g, mk_node("Sum", "y", NAMES("sa", "sc", "sn", "st"), NAMES("y")));
}

/* Cubic and antialiased along all four dims (about 670 tap combinations an
 * element): its forward and adjoint run a pass per dim. */
static void b_resize_every_dim(Onnx__GraphProto *g)
{
    static int64_t four[] = {4};
    static const float scales[] = {1.5f, 0.7f, 1.3f, 0.6f};
    PUSH(g->n_initializer, g->initializer, mk_raw("s_all", XF_DT_FLOAT, 1, four, scales, sizeof scales));
    Onnx__NodeProto *c = mk_node("Resize", "every_dim", NAMES("x0", "", "s_all"), NAMES("c"));
    attr_string(c, "mode", "cubic");
    attr_int(c, "antialias", 1);
    add_node(g, c);
    square_sum(g, "c", "y");
}

static void b_upsample(Onnx__GraphProto *g)
{
    static int64_t four[] = {4};
    static const float scales[] = {1, 1, 2, 3};
    PUSH(g->n_initializer, g->initializer, mk_raw("scales", XF_DT_FLOAT, 1, four, scales, sizeof scales));
    Onnx__NodeProto *u = mk_node("Upsample", "up", NAMES("x0", "scales"), NAMES("u"));
    attr_string(u, "mode", "linear");
    add_node(g, u);
    add_node(g, mk_node("Mul", "y", NAMES("u", "u"), NAMES("y")));
}

static void b_einsum_top_k(Onnx__GraphProto *g)
{
    static int64_t one[] = {1}, two[] = {2};
    PUSH(g->n_initializer, g->initializer, mk_raw("k", XF_DT_INT64, 1, one, two, sizeof two[0]));
    Onnx__NodeProto *e1 = mk_node("Einsum", "batched", NAMES("x0", "x1"), NAMES("e1"));
    attr_string(e1, "equation", "bij,bjk->bik");
    add_node(g, e1);
    Onnx__NodeProto *e2 = mk_node("Einsum", "diagonal", NAMES("x2"), NAMES("e2"));
    attr_string(e2, "equation", "ii->i");
    add_node(g, e2);
    Onnx__NodeProto *e3 = mk_node("Einsum", "vector", NAMES("x0", "x3"), NAMES("e3"));
    attr_string(e3, "equation", "...j,j->...");
    add_node(g, e3);
    Onnx__NodeProto *t = mk_node("TopK", "top", NAMES("x0", "k"), NAMES("t", "ti"));
    attr_int(t, "axis", 1);
    add_node(g, t);
    static const char *const steps[] = {"Round", "Floor", "Ceil", "Sign"};
    static const char *const outs[] = {"r0", "r1", "r2", "r3"};
    for (int k = 0; k < 4; k++)
        add_node(g, mk_node(steps[k], outs[k], NAMES("x2"), (const char *[]){outs[k], NULL}));
    add_node(g, mk_node("Sum", "steps", NAMES("r0", "r1", "r2", "r3"), NAMES("rs")));
    add_node(g, mk_node("Mul", "stepped", NAMES("rs", "x2"), NAMES("st")));
    add_node(g, mk_node("Dropout", "dropout", NAMES("x1"), NAMES("d"))); /* inference: sessions drop it */
    static const char *const parts[] = {"e1", "e2", "e3", "t", "st", "d"};
    static const char *const sums[] = {"s1", "s2", "s3", "s4", "s5", "s6", NULL};
    for (int k = 0; k < 6; k++)
        square_sum(g, parts[k], sums[k]);
    add_node(g, mk_node("Sum", "y", (const char **)sums, NAMES("y")));
}

#define S(...) {(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}}
static const gcase cases[] = {
    {"Add", 2, 2, {S(2, 3), S(3)}, false, b_add},
    {"Sub", 2, 2, {S(2, 1, 3), S(4, 1)}, false, b_sub},
    {"Mul", 2, 2, {S(2, 3), S(1, 3)}, false, b_mul},
    {"Div", 2, 2, {S(3), S(2, 3)}, true, b_div},
    {"Pow", 2, 2, {S(2, 3), S(3)}, true, b_pow},
    {"MatMul of batches", 2, 2, {S(2, 1, 3, 4), S(5, 4, 2)}, false, b_matmul},
    {"MatMul of vectors", 2, 2, {S(4), S(4, 3)}, false, b_matmul},
    {"unary chain", 2, 2, {S(2, 3), S(3)}, false, b_unary},
    {"Sum", 2, 2, {S(2, 3), S(1)}, false, b_sum},
    {"Gemm", 3, 3, {S(4, 3), S(5, 4), S(5)}, false, b_gemm},
    {"shape ops", 3, 2, {S(2, 3, 4), S(24), S(24)}, false, b_shapes},
    {"ReduceSum and ReduceMean", 2, 2, {S(2, 3, 4), S(3, 1)}, false, b_reduce},
    {"Softmax and LogSoftmax", 2, 2, {S(2, 3, 4), S(3, 1)}, false, b_softmax},
    {"Where, Expand, Clip, LeakyRelu, Cos, Erf, Sin, Cast", 2, 2, {S(2, 3), S(3)}, false, b_select},
    {"Concat, Gather, Split and Slice", 2, 2, {S(2, 3), S(2, 2)}, false, b_pieces},
    {"Conv with groups, strides, pads, dilations and bias", 3, 3, {S(2, 4, 5, 6), S(6, 2, 3, 2), S(6)}, false,
     b_conv},
    {"1-D Conv, SAME_LOWER, then Relu", 2, 2, {S(2, 3, 7), S(4, 3, 3)}, false, b_conv_relu},
    {"MaxPool, AveragePool, LpPool and the global pools", 1, 1, {S(2, 2, 5, 5)}, false, b_pools},
    {"BatchNormalization", 5, 5, {S(2, 3, 4), S(3), S(3), S(3), S(3)}, true, b_batch_norm},
    {"BatchNormalization in training mode", 5, 5, {S(3, 2, 4), S(2), S(2), S(2), S(2)}, true, b_batch_norm_training,
     15},
    {"LayerNormalization, InstanceNormalization, GroupNormalization", 5, 5, {S(2, 3, 4), S(4), S(3, 4), S(3), S(3)},
     false, b_norms, 21},
    {"GroupNormalization of two groups", 3, 3, {S(2, 4, 3), S(4), S(4)}, false, b_group_norm, 21},
    {"Pad, Tile, Trilu, DepthToSpace, SpaceToDepth", 3, 3, {S(2, 3, 4), {0, {0}}, S(1, 8, 2, 3)}, false, b_moves, 18},
    {"GatherElements, GatherND, the Scatters, ReverseSequence, Compress, CenterCropPad", 3, 3,
     {S(3, 4), S(1, 2), S(1, 4)}, false, b_indexing, 18},
    {"Max, Min, Mean and PRelu", 3, 3, {S(2, 3), S(3), S(2, 1)}, false, b_extremes},
    {"Softplus to Acosh", 2, 2, {S(4, 3), S(3)}, false, b_unary_more, 24},
    {"the Reduce ops and CumSum", 1, 1, {S(2, 3, 4)}, false, b_reduce_family, 18},
    {"ConvTranspose with groups, strides, pads, output_padding, dilations and bias", 3, 3,
     {S(1, 4, 3, 4), S(4, 3, 2, 3), S(6)}, false, b_conv_transpose},
    {"1-D ConvTranspose to an output_shape", 2, 2, {S(2, 2, 5), S(2, 1, 3)}, false, b_conv_transpose_shape},
    {"Resize linear (antialiased), cubic, nearest and tf_crop_and_resize", 1, 1, {S(1, 2, 4, 5)}, false, b_resize,
     18},
    {"Resize cubic and antialiased along every dim", 1, 1, {S(2, 3, 4, 5)}, false, b_resize_every_dim, 18},
    {"Upsample", 1, 1, {S(1, 1, 3, 2)}, false, b_upsample, 9},
    {"Einsum (products, a diagonal, an ellipsis), TopK, Round, Floor, Ceil, Sign, and a Dropout", 4, 4,
     {S(2, 3, 4), S(2, 4, 2), S(3, 3), S(4)}, false, b_einsum_top_k, 13},
};

static uint64_t rng_state = 12345;
static double uniform(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* The case's model: inputs x0.., its nodes, and a Gradient of y with
 * respect to the first n_xs inputs (the others zs); outputs y, then the
 * gradients g0... */
static xf_model *case_model(const gcase *c)
{
    Onnx__GraphProto *g = mk_graph(c->what);
    static const char *const xn[] = {"x0", "x1", "x2", "x3", "x4"}, *const gn[] = {"g0", "g1", "g2", "g3", "g4"};
    for (int i = 0; i < c->n_in; i++)
        PUSH(g->n_input, g->input, mk_vi(xn[i], XF_DT_DOUBLE, c->shapes[i].ndim, c->shapes[i].dims, NULL));
    c->build(g);
    const char **ins = zalloc(sizeof *ins * (MAX_X + 1)), **outs = zalloc(sizeof *outs * (MAX_X + 1));
    for (int i = 0; i < c->n_in; i++)
        ins[i] = xn[i];
    for (int i = 0; i < c->n_xs; i++)
        outs[i] = gn[i];
    add_gradient(g, ins, outs, c->n_xs, xn, c->n_in - c->n_xs, xn + c->n_xs, "y");
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_DOUBLE, -1, NULL, NULL));
    for (int i = 0; i < c->n_xs; i++)
        PUSH(g->n_output, g->output, mk_vi(gn[i], XF_DT_DOUBLE, -1, NULL, NULL));
    Onnx__ModelProto *mp = training_model(g, c->opset);
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s: %s", c->what, e.msg);
    return m;
}

/* Runs s on x; out gets y and the gradients. */
static void run(xf_session *s, xf_tensor **x, xf_tensor **out, const char *what)
{
    xf_error e;
    ck_assert_msg(xf_session_run(s, x, out, &e) == XF_OK, "%s: %s", what, e.msg);
}

static double sum_of(const xf_tensor *t)
{
    double s = 0;
    for (int64_t i = 0; i < xf_tensor_numel(t); i++)
        s += ((const double *)t->data)[i];
    return s;
}

START_TEST(against_differences)
{
    const gcase *c = &cases[_i];
    xf_model *m = case_model(c);
    xf_tensor *x[MAX_X] = {0};
    for (int i = 0; i < c->n_in; i++) {
        x[i] = xf_tensor_create(XF_DT_DOUBLE, &c->shapes[i]);
        for (int64_t k = 0; k < xf_tensor_numel(x[i]); k++)
            ((double *)x[i]->data)[k] = c->positive ? 0.5 + uniform() : 2 * uniform() - 1;
    }
    const char *backends[2];
    int nb = host_backends(backends);
    xf_tensor *ref[1 + MAX_X] = {0};
    for (int b = 0; b < nb; b++) {
        xf_session *s;
        xf_error e;
        ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), backends[b], NULL, &s, &e) == XF_OK, "%s: %s",
                      c->what, e.msg);
        xf_tensor *out[1 + MAX_X] = {0};
        run(s, x, out, c->what);
        if (b == 0) {
            /* central differences of sum(y), input by input, element by element */
            for (int i = 0; i < c->n_xs; i++) {
                ck_assert_msg(out[1 + i] && out[1 + i]->dtype == XF_DT_DOUBLE &&
                                  xf_shape_equal(&out[1 + i]->shape, &c->shapes[i]),
                              "%s: gradient %d: type or shape", c->what, i);
                for (int64_t k = 0; k < xf_tensor_numel(x[i]); k++) {
                    double *v = (double *)x[i]->data + k, keep = *v, h = 1e-5, f[2];
                    for (int side = 0; side < 2; side++) {
                        xf_tensor *o[1 + MAX_X] = {0};
                        *v = keep + (side ? -h : h);
                        run(s, x, o, c->what);
                        f[side] = sum_of(o[0]);
                        for (int j = 0; j <= c->n_xs; j++)
                            xf_tensor_release(o[j]);
                    }
                    *v = keep;
                    double want = (f[0] - f[1]) / (2 * h), got = ((const double *)out[1 + i]->data)[k];
                    ck_assert_msg(fabs(got - want) <= 1e-6 * (1 + fabs(want)),
                                  "%s: d y / d x%d [%lld] is %.10g, the differences give %.10g", c->what, i,
                                  (long long)k, got, want);
                }
            }
            memcpy(ref, out, sizeof ref);
        } else {
            for (int i = 0; i <= c->n_xs; i++) {
                for (int64_t k = 0; k < xf_tensor_numel(ref[i]); k++)
                    ck_assert_msg(fabs(((const double *)out[i]->data)[k] - ((const double *)ref[i]->data)[k]) <=
                                      1e-9 * (1 + fabs(((const double *)ref[i]->data)[k])),
                                  "%s: output %d [%lld] differs on %s", c->what, i, (long long)k, backends[b]);
                xf_tensor_release(out[i]);
            }
        }
        xf_session_free(s);
    }
    for (int i = 0; i <= c->n_xs; i++)
        xf_tensor_release(ref[i]);
    for (int i = 0; i < c->n_in; i++)
        xf_tensor_release(x[i]);
    xf_model_free(m);
}
END_TEST

/* y = x * z with zs [z]: dy/dx is z; the conformance suite's two cases
 * (y of Add, of Add then Mul) as scalars. */
START_TEST(zs_and_scalars)
{
    Onnx__GraphProto *g = mk_graph("xz");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, (int64_t[]){3}, NULL));
    PUSH(g->n_input, g->input, mk_vi("z", XF_DT_FLOAT, 1, (int64_t[]){3}, NULL));
    add_node(g, mk_node("Mul", "mul", NAMES("x", "z"), NAMES("y")));
    add_gradient(g, NAMES("x", "z"), NAMES("dx"), 1, NAMES("x"), 1, NAMES("z"), "y");
    PUSH(g->n_output, g->output, mk_vi("dx", XF_DT_FLOAT, 1, (int64_t[]){3}, NULL));
    Onnx__ModelProto *mp = training_model(g, 0);
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    const float xv[] = {1, 2, 3}, zv[] = {-4, 0.5f, 7};
    xf_tensor *in[2] = {xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){1, {3}}, xv),
                        xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){1, {3}}, zv)};
    xf_tensor *out[1] = {0};
    xf_session *s;
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    run(s, in, out, "x * z");
    for (int k = 0; k < 3; k++)
        ck_assert_msg(((const float *)out[0]->data)[k] == zv[k], "dx[%d] is %g", k,
                      (double)((const float *)out[0]->data)[k]);
    xf_tensor_release(out[0]);
    xf_tensor_release(in[0]);
    xf_tensor_release(in[1]);
    xf_session_free(s);
    xf_model_free(m);
}
END_TEST

/* At opset 10: a MaxPool whose windows hold a tie and a ReduceMax pass
 * the gradient to the first maximum, a Pad whose constant is an
 * attribute passes none from its constant, and a ReduceProd over one zero
 * passes the product of the others to it: y = sum(MaxPool(x)) +
 * sum(Pad(x)) + ReduceProd(x) + ReduceMax(x). */
START_TEST(ties_and_attribute_pad)
{
    Onnx__GraphProto *g = mk_graph("ties");
    static int64_t dims[] = {1, 1, 6}, kernel[] = {2}, pads[] = {0, 0, 1, 0, 0, 2};
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, dims, NULL));
    Onnx__NodeProto *mp = mk_node("MaxPool", "max", NAMES("x"), NAMES("m"));
    attr_ints(mp, "kernel_shape", 1, kernel);
    attr_ints(mp, "strides", 1, kernel);
    add_node(g, mp);
    Onnx__NodeProto *pad = mk_node("Pad", "pad", NAMES("x"), NAMES("p"));
    attr_ints(pad, "pads", 6, pads);
    attr_float(pad, "value", 5);
    add_node(g, pad);
    add_node(g, mk_node("ReduceSum", "sum_m", NAMES("m"), NAMES("sm")));
    add_node(g, mk_node("ReduceSum", "sum_p", NAMES("p"), NAMES("sp")));
    add_node(g, mk_node("ReduceProd", "prod", NAMES("x"), NAMES("pr")));
    add_node(g, mk_node("ReduceMax", "most", NAMES("x"), NAMES("mo")));
    add_node(g, mk_node("Sum", "y", NAMES("sm", "sp", "pr", "mo"), NAMES("y")));
    add_gradient(g, NAMES("x"), NAMES("dx"), 1, NAMES("x"), 0, NULL, "y");
    PUSH(g->n_output, g->output, mk_vi("dx", XF_DT_FLOAT, 3, dims, NULL));
    Onnx__ModelProto *mp_ = training_model(g, 10);
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp_, NULL, &m, &e) == XF_OK, "%s", e.msg);
    /* ReduceProd's zero takes the product of the others, ReduceMax's first 3 its gradient */
    static const float xv[] = {3, 3, 1, 1, 2, 0}, want[] = {3, 1, 2, 1, 2, 19};
    xf_tensor *in[1] = {xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){3, {1, 1, 6}}, xv)};
    const char *backends[2];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        xf_tensor *out[1] = {0};
        xf_session *s;
        ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), backends[b], NULL, &s, &e) == XF_OK, "%s", e.msg);
        run(s, in, out, "ties");
        for (int k = 0; k < 6; k++)
            ck_assert_msg(((const float *)out[0]->data)[k] == want[k], "%s: dx[%d] is %g, not %g", backends[b], k,
                          (double)((const float *)out[0]->data)[k], (double)want[k]);
        xf_tensor_release(out[0]);
        xf_session_free(s);
    }
    xf_tensor_release(in[0]);
    xf_model_free(m);
}
END_TEST

/* The session is refused, naming what: for y = Hardmax(x) (no derivative
 * modelled), y = x + q with q a graph input outside xs and zs, xs naming
 * a value the graph lacks (refused at load, by name), y reading the Mean
 * output of a LayerNormalization, a ScatterElements that adds, and a
 * Resize whose scales vary with the xs. */
START_TEST(refusals)
{
    for (int k = 0; k < 6; k++) {
        Onnx__GraphProto *g = mk_graph("bad");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, (int64_t[]){3}, NULL));
        PUSH(g->n_input, g->input, mk_vi("q", XF_DT_FLOAT, 1, (int64_t[]){3}, NULL));
        static const float one = 1;
        static int64_t at = 1, dims[] = {1};
        PUSH(g->n_initializer, g->initializer, mk_raw("one", XF_DT_FLOAT, 1, dims, &one, sizeof one));
        PUSH(g->n_initializer, g->initializer, mk_raw("at", XF_DT_INT64, 1, dims, &at, sizeof at));
        if (k == 0) {
            add_node(g, mk_node("Hardmax", "hardmax", NAMES("x"), NAMES("y")));
        } else if (k == 3) {
            add_node(g, mk_node("LayerNormalization", "ln", NAMES("x", "one"), NAMES("n", "mean")));
            add_node(g, mk_node("Add", "add", NAMES("n", "mean"), NAMES("y")));
        } else if (k == 4) {
            Onnx__NodeProto *n = mk_node("ScatterElements", "scatter", NAMES("x", "at", "one"), NAMES("y"));
            attr_string(n, "reduction", "add");
            add_node(g, n);
        } else if (k == 5) {
            add_node(g, mk_node("Slice", "first", NAMES("q", "at", "at"), NAMES("s"))); /* q's first element */
            add_node(g, mk_node("Resize", "resize", NAMES("x", "", "s"), NAMES("y")));
        } else {
            add_node(g, mk_node("Add", "add", NAMES("x", "q"), NAMES("y")));
        }
        if (k == 5)
            add_gradient(g, NAMES("x", "q"), NAMES("dx", "dq"), 2, NAMES("x", "q"), 0, NULL, "y");
        else
            add_gradient(g, NAMES("x"), NAMES("dx"), 1, k == 2 ? NAMES("nowhere") : NAMES("x"), 0, NULL, "y");
        PUSH(g->n_output, g->output, mk_vi("dx", XF_DT_FLOAT, 1, (int64_t[]){3}, NULL));
        Onnx__ModelProto *mp = training_model(g, 0);
        xf_model *m;
        xf_error e;
        xf_status st = load_proto(mp, NULL, &m, &e);
        if (k == 2) {
            ck_assert_int_ne(st, XF_OK);
            ck_assert_msg(strstr(e.msg, "Gradient") && strstr(e.msg, "names 'nowhere', which is not defined"), "%s",
                          e.msg);
            continue;
        }
        ck_assert_msg(st == XF_OK, "%s", e.msg);
        xf_session *s = NULL;
        ck_assert_int_ne(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e), XF_OK);
        static const char *const wants[] = {
            "node 'gradient' (Gradient): has no derivative of Hardmax modelled, for the node that computes 'y'",
            "none of xs and zs, and not a constant: add it to zs: 'q'", NULL,
            "has no derivative of LayerNormalization's Mean and InvStdDev outputs modelled, for the node that "
            "computes 'n'",
            "has no derivative of ScatterElements with a reduction modelled, for the node that computes 'y'",
            "has no derivative of Resize's roi or scales modelled, for the node that computes 'y'"};
        const char *want = wants[k];
        ck_assert_msg(strstr(e.msg, want), "%s", e.msg);
        xf_model_free(m);
    }
}
END_TEST

/* xflowc drops the Identity that y names (Gradient's y then stands for
 * the value before it): --check runs both models and finds the gradients
 * equal, and the written model, where an Identity gives that value y's
 * name again, runs. */
START_TEST(optimized)
{
    const char *dir = xf_test_tmpdir("gradient-xflowc");
    ck_assert_ptr_nonnull(dir);
    Onnx__GraphProto *g = mk_graph("mlp");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, (int64_t[]){2, 4}, NULL));
    static const float w[12] = {0.5f, -1, 2, 0.25f, 1, -0.5f, -2, 0.75f, 1.5f, 1, -1, 0.5f};
    static const float bias[3] = {0.1f, -0.2f, 0.3f};
    static int64_t wd[] = {4, 3}, bd[] = {3};
    PUSH(g->n_initializer, g->initializer, mk_raw("W", XF_DT_FLOAT, 2, wd, w, sizeof w));
    PUSH(g->n_initializer, g->initializer, mk_raw("B", XF_DT_FLOAT, 1, bd, bias, sizeof bias));
    add_node(g, mk_node("MatMul", "mm", NAMES("x", "W"), NAMES("m")));
    add_node(g, mk_node("Add", "add", NAMES("m", "B"), NAMES("a")));
    add_node(g, mk_node("Sigmoid", "act", NAMES("a"), NAMES("r")));
    add_node(g, mk_node("Identity", "same", NAMES("r"), NAMES("i")));
    add_node(g, mk_node("Mul", "square", NAMES("i", "i"), NAMES("y")));
    add_gradient(g, NAMES("x"), NAMES("dx"), 1, NAMES("x"), 0, NULL, "i");
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, (int64_t[]){2, 3}, NULL));
    PUSH(g->n_output, g->output, mk_vi("dx", XF_DT_FLOAT, 2, (int64_t[]){2, 4}, NULL));
    Onnx__ModelProto *mp = training_model(g, 0);
    char in[4200], out_path[4200], cmd[9000], *out = NULL;
    snprintf(in, sizeof in, "%s/mlp.onnx", dir);
    snprintf(out_path, sizeof out_path, "%s/mlp-opt.onnx", dir);
    write_model(mp, in);
    snprintf(cmd, sizeof cmd, "%s %s -o %s --check", xf_test_tool("xflowc"), in, out_path);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "Identity                       1 -> 0") && strstr(out, "check: output 'dx'"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s %s", xf_test_tool("xflow-run"), out_path);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "output 'dx' FLOAT 2x4"), "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gradient");
    TCase *tc = tcase_create("gradient");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_loop_test(tc, against_differences, 0, (int)(sizeof cases / sizeof *cases));
    tcase_add_test(tc, zs_and_scalars);
    tcase_add_test(tc, ties_and_attribute_pad);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, optimized);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
