/* ImageDecoder on the host backends (runtime/image_decoder.c): the files
 * of tests/images (written by its make_images.py with Pillow) decoded in
 * every format to the pattern they hold, as RGB, BGR and Grayscale
 * (Pillow's weights); JPEGs to Pillow's own decoding; the portable maps'
 * plain, bitmap and 16-bit forms, paletted BMPs; bytes that do not decode
 * to an empty image; an image beyond the session's tensor limit, an unknown
 * pixel_format and bytes that are not uint8 refused naming the node; the
 * tools' random images for ImageDecoder's bytes, and the formats
 * xflow-run --version lists. */
#include "proto_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMES(...) ((const char *[]){__VA_ARGS__, NULL})
enum { W = 7, H = 5 };

/* The bytes of tests/images/name (*len of them). */
static uint8_t *image_file(const char *name, int64_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/images/%s", XF_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f, "cannot open %s", path);
    uint8_t *b = malloc(1 << 16);
    *len = (int64_t)fread(b, 1, 1 << 16, f);
    fclose(f);
    return b;
}

/* The pattern's channel c at x, y (make_images.py). */
static int pattern(int x, int y, int c)
{
    return c == 0 ? 36 * x + 3 : c == 1 ? 50 * y + 7 : (13 * x * y + x + 5 * y) % 256;
}

static int gray(int r, int g, int b) { return (int)(((unsigned)r * 19595u + (unsigned)g * 38470u + (unsigned)b * 7471u + 0x8000u) >> 16); }

/* ImageDecoder of pixel_format (NULL: left out) on bytes b, on backend,
 * with the tensor limit max; the error in *fail (NULL: it must decode). */
static xf_tensor *decode_on(const char *backend, const char *format, const uint8_t *b, int64_t len, size_t max,
                            xf_error *fail)
{
    Onnx__NodeProto *n = mk_node("ImageDecoder", "decode", NAMES("x"), NAMES("y"));
    if (format)
        attr_string(n, "pixel_format", format);
    Onnx__GraphProto *g = mk_graph("image");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_UINT8, 1, (int64_t[]){len}, NULL));
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_UNDEFINED, -1, NULL, NULL));
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 20), NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_tensor *x = xf_tensor_from_data(XF_DT_UINT8, &(xf_shape){1, {len}}, b), *y = NULL;
    xf_session *s = NULL;
    xf_session_options opt = {.max_tensor_bytes = max};
    xf_status st = xf_session_create(m->graph, xf_model_opset(m), backend, &opt, &s, &e);
    if (st == XF_OK)
        st = xf_session_run(s, &x, &y, &e);
    ck_assert_msg(st == XF_OK || fail, "%s: %s", backend, e.msg);
    ck_assert_msg(st != XF_OK || !fail, "%s: ran, and should have failed", backend);
    if (fail)
        *fail = e;
    xf_tensor_release(x);
    xf_session_free(s);
    xf_model_free(m);
    return y;
}

/* y is uint8 [H, W, channels] and pixel(x, y, c) gives each value. */
static void assert_image(const xf_tensor *y, int64_t h, int64_t w, int channels, int (*pixel)(const void *, int, int, int),
                         const void *arg, const char *what)
{
    xf_shape s = {3, {h, w, channels}};
    ck_assert_msg(y && y->dtype == XF_DT_UINT8 && xf_shape_equal(&y->shape, &s), "%s: type or shape", what);
    const uint8_t *d = y->data;
    for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++)
            for (int c = 0; c < channels; c++) {
                int want = pixel(arg, j, i, c), got = d[(i * w + j) * channels + c];
                ck_assert_msg(got == want, "%s: pixel %d, %d channel %d is %d, want %d", what, j, i, c, got, want);
            }
}

/* The pattern as format asks: RGB, BGR (channels reversed) or Grayscale. */
static int pattern_as(const void *format, int x, int y, int c)
{
    const char *f = format;
    if (!strcmp(f, "Grayscale"))
        return gray(pattern(x, y, 0), pattern(x, y, 1), pattern(x, y, 2));
    return pattern(x, y, !strcmp(f, "BGR") ? 2 - c : c);
}

/* Every lossless file gives the pattern, in the three pixel formats, the
 * attribute left out meaning RGB.  A build without a format's library
 * (scripts/setup.sh installs them all) says so, and decodes nothing. */
START_TEST(lossless_formats)
{
    static const char *const files[][2] = {
        {"pattern.png", " png"},      {"pattern_palette.png", " png"}, {"pattern_rgba.png", " png"},
        {"pattern.bmp", " bmp"},      {"pattern_palette.bmp", " bmp"}, {"pattern.tiff", " tiff"},
        {"pattern.webp", " webp"},    {"pattern.jp2", " jpeg2000"},    {"pattern.j2k", " jpeg2000"},
        {"pattern.ppm", " pnm"},      {"pattern_plain.ppm", " pnm"}};
    static const char *const formats[] = {"RGB", "BGR", "Grayscale", NULL};
    const char *backends[2];
    int nb = host_backends(backends);
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        int64_t len;
        uint8_t *b = image_file(files[f][0], &len);
        if (!strstr(xf_runtime_image_formats(), files[f][1])) {
            printf("test_image_decoder: skipped: %s, this build decodes no%s (its library was not found)\n",
                   files[f][0], files[f][1]);
            xf_tensor *y = decode_on("cpu_ref", NULL, b, len, 0, NULL);
            ck_assert_int_eq(y->shape.dims[0], 0);
            xf_tensor_release(y);
            free(b);
            continue;
        }
        for (int b_ = 0; b_ < nb; b_++)
            for (int k = 0; k < 4; k++) {
                char what[128];
                snprintf(what, sizeof what, "%s as %s on %s", files[f][0], formats[k] ? formats[k] : "default",
                         backends[b_]);
                xf_tensor *y = decode_on(backends[b_], formats[k], b, len, 0, NULL);
                const char *as = formats[k] ? formats[k] : "RGB";
                assert_image(y, H, W, strcmp(as, "Grayscale") ? 3 : 1, pattern_as, as, what);
                xf_tensor_release(y);
            }
        free(b);
    }
}
END_TEST

static int from_raw(const void *raw, int x, int y, int c) { return ((const uint8_t *)raw)[(y * W + x) * 3 + c]; }

/* JPEGs (4:2:0 and CMYK with Adobe's inverted inks) give Pillow's pixels,
 * which are libjpeg-turbo's; Grayscale weighs them as Pillow does; bytes
 * before a marker (libjpeg's warning of extraneous data) change nothing,
 * as for Pillow; a CMYK TIFF's inks give Pillow's rounding of their
 * product, where libtiff's RGBA reading rounds down. */
START_TEST(as_pillow)
{
    static const char *const files[][3] = {{"pattern.jpg", "pattern_jpg.rgb", " jpeg"},
                                           {"cmyk.jpg", "cmyk_jpg.rgb", " jpeg"},
                                           {"extraneous.jpg", "pattern_jpg.rgb", " jpeg"},
                                           {"cmyk.tiff", "cmyk_tiff.rgb", " tiff"}};
    for (int f = 0; f < 4; f++) {
        if (!strstr(xf_runtime_image_formats(), files[f][2]))
            continue; /* lossless_formats says so */
        int64_t len, raw_len;
        uint8_t *b = image_file(files[f][0], &len), *raw = image_file(files[f][1], &raw_len);
        ck_assert_int_eq(raw_len, W * H * 3);
        xf_tensor *y = decode_on("cpu_ref", "RGB", b, len, 0, NULL);
        assert_image(y, H, W, 3, from_raw, raw, files[f][0]);
        xf_tensor *g = decode_on("cpu_ref", "Grayscale", b, len, 0, NULL);
        for (int k = 0; k < W * H; k++)
            ck_assert_int_eq(((uint8_t *)g->data)[k], gray(raw[k * 3], raw[k * 3 + 1], raw[k * 3 + 2]));
        xf_tensor_release(y);
        xf_tensor_release(g);
        free(b);
        free(raw);
    }
}
END_TEST

static int checker(const void *arg, int x, int y, int c)
{
    (void)arg;
    (void)c;
    return (x + y) % 2 ? 0 : 255; /* a plain bitmap's 1 is black */
}

static int sixteen(const void *arg, int x, int y, int c)
{
    (void)arg;
    (void)c;
    unsigned v = (unsigned)pattern(x, y, 1) * 256u + 40u * (unsigned)x;
    return (int)((v * 255u + 32767u) / 65535u);
}

static int white(const void *arg, int x, int y, int c)
{
    (void)arg, (void)x, (void)y, (void)c;
    return 255;
}

/* Bitmaps in black and white, plain (P1) and as a 1-bit BMP, 1- and 4-bit
 * BMPs all white whose rows end in bits set past their palette (which no
 * pixel names), a 16-bit gray map scaled to 8 bits, gray replicated to the three
 * channels. */
START_TEST(bitmaps)
{
    int64_t len;
    uint8_t *b;
    xf_tensor *y;
    static const char *const files[][2] = {
        {"checker.pbm", " pnm"}, {"checker.bmp", " bmp"}, {"white.bmp", " bmp"}, {"white4.bmp", " bmp"}};
    for (int f = 0; f < 4; f++) {
        if (!strstr(xf_runtime_image_formats(), files[f][1]))
            continue;
        b = image_file(files[f][0], &len);
        y = decode_on("cpu_ref", "RGB", b, len, 0, NULL);
        assert_image(y, H, W, 3, f >= 2 ? white : checker, NULL, files[f][0]);
        xf_tensor_release(y);
        free(b);
    }
    b = image_file("pattern16.pgm", &len);
    y = decode_on("cpu_ref", "BGR", b, len, 0, NULL);
    assert_image(y, H, W, 3, sixteen, NULL, "pattern16.pgm");
    xf_tensor_release(y);
    free(b);
}
END_TEST

/* Bytes that do not decode give [0, 0, C]: nothing, an unknown format, a
 * format's signature alone, PNG, JPEG, WebP and JPEG 2000 streams cut in
 * half or short of their last 6 bytes (libjpeg would make up the rest of
 * a JPEG's pixels), a PNG with a corrupted pixel chunk, paletted BMPs
 * (8 and 1 bits) with a pixel one past the palette's end (which stb_image
 * would give from its unwritten stack); a header claiming 40000 x 40000
 * pixels over a few bytes is corrupt data too when the session has no
 * limit, and an image too large for the session's limit when it has. */
START_TEST(undecodable)
{
    static const char *const files[] = {"pattern.png", "pattern.jpg", "pattern.webp", "pattern.jp2", "big_header.png"};
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        int64_t len;
        uint8_t *b = image_file(files[f], &len);
        for (int cut = 0; cut < 3; cut++) {
            int64_t n = cut == 0 ? len / 2 : cut == 1 ? 12 : len - 6;
            if (cut == 2 && f == 0) { /* a PNG whole, a byte of its pixel chunk changed */
                n = len;
                b[len - 20] ^= 0x55;
            }
            for (int g = 0; g < 2; g++) {
                xf_tensor *y = decode_on("cpu_ref", g ? "Grayscale" : "RGB", b, n, 0, NULL);
                xf_shape s = {3, {0, 0, g ? 1 : 3}};
                ck_assert_msg(y && y->dtype == XF_DT_UINT8 && xf_shape_equal(&y->shape, &s),
                              "%s cut to %lld bytes: not an empty image", files[f], (long long)n);
                xf_tensor_release(y);
            }
        }
        free(b);
    }
    static const char *const beyond[] = {"palette_beyond.bmp", "checker_beyond.bmp"};
    for (int f = 0; f < 2; f++) {
        if (!strstr(xf_runtime_image_formats(), " bmp"))
            break;
        int64_t len;
        uint8_t *b = image_file(beyond[f], &len);
        xf_tensor *y = decode_on("cpu_ref", NULL, b, len, 0, NULL);
        ck_assert_msg(y && y->shape.dims[0] == 0 && y->shape.dims[1] == 0, "%s: not an empty image", beyond[f]);
        xf_tensor_release(y);
        free(b);
    }
    static const uint8_t junk[] = "GIF89a, which no build decodes";
    xf_tensor *y = decode_on("cpu_ref", NULL, junk, sizeof junk, 0, NULL);
    ck_assert_msg(y && y->shape.dims[0] == 0 && y->shape.dims[1] == 0 && y->shape.dims[2] == 3, "GIF");
    xf_tensor_release(y);
    y = decode_on("cpu_ref", NULL, junk, 0, 0, NULL);
    ck_assert_msg(y && y->shape.dims[0] == 0 && y->shape.dims[2] == 3, "no bytes");
    xf_tensor_release(y);

    int64_t len;
    uint8_t *b = image_file("big_header.png", &len);
    xf_error e;
    ck_assert_ptr_null(decode_on("cpu_ref", NULL, b, len, 1 << 20, &e));
    ck_assert_msg(strstr(e.msg, "node 'decode' (ImageDecoder)") && strstr(e.msg, "40000 x 40000") &&
                      strstr(e.msg, "tensor limit"),
                  "%s", e.msg);
    free(b);
}
END_TEST

/* An unknown pixel_format fails the session's creation, bytes of another
 * type the run, each naming the node. */
START_TEST(refusals)
{
    int64_t len;
    uint8_t *b = image_file("pattern.png", &len);
    xf_error e;
    ck_assert_ptr_null(decode_on("cpu_ref", "RGBA", b, len, 0, &e));
    ck_assert_msg(strstr(e.msg, "node 'decode' (ImageDecoder): pixel_format 'RGBA' is none of RGB, BGR, Grayscale"),
                  "%s", e.msg);
    free(b);

    Onnx__NodeProto *n = mk_node("ImageDecoder", "decode", NAMES("x"), NAMES("y"));
    Onnx__GraphProto *g = mk_graph("image");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, (int64_t[]){4}, NULL));
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_UNDEFINED, -1, NULL, NULL));
    xf_model *m;
    ck_assert_msg(load_proto(mk_model(g, 20), NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_session *s = NULL;
    xf_tensor *x = xf_tensor_create(XF_DT_FLOAT, &(xf_shape){1, {4}}), *y = NULL;
    xf_status st = xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e);
    if (st == XF_OK)
        st = xf_session_run(s, &x, &y, &e);
    ck_assert_int_ne(st, XF_OK);
    ck_assert_msg(strstr(e.msg, "ImageDecoder") && strstr(e.msg, "uint8"), "%s", e.msg);
    xf_tensor_release(x);
    xf_session_free(s);
    xf_model_free(m);
}
END_TEST

/* xflow-run and xflowc --check make an ImageDecoder's random input an
 * encoded image (a PPM of random pixels) where the bytes the input is
 * given hold one, and say how to give it one where they do not. */
START_TEST(random_images)
{
    const char *dir = xf_test_tmpdir("image-tools");
    ck_assert_ptr_nonnull(dir);
    Onnx__NodeProto *d = mk_node("ImageDecoder", "decode", NAMES("x"), NAMES("img"));
    Onnx__NodeProto *c = mk_node("Cast", "cast", NAMES("img"), NAMES("f"));
    attr_int(c, "to", 1);
    Onnx__NodeProto *r = mk_node("ReduceMean", "mean", NAMES("f"), NAMES("y"));
    attr_int(r, "keepdims", 0);
    Onnx__GraphProto *g = mk_graph("image");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_UINT8, 1, (int64_t[]){-1}, NAMES("bytes")));
    PUSH(g->n_node, g->node, d);
    PUSH(g->n_node, g->node, c);
    PUSH(g->n_node, g->node, r);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 0, NULL, NULL));
    char in[4200], cmd[9000], *out = NULL;
    snprintf(in, sizeof in, "%s/decode.onnx", dir);
    write_model(mk_model(g, 20), in);
    /* 12301 bytes: a 64x64 PPM, random pixels of mean about 127.5 */
    snprintf(cmd, sizeof cmd, "%s %s --input-shape x=12301", xf_test_tool("xflow-run"), in);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    float mean = -1;
    const char *at = strstr(out, "output 'y' FLOAT scalar: ");
    ck_assert_msg(at && sscanf(at + strlen("output 'y' FLOAT scalar: "), "%f", &mean) == 1, "%s", out);
    ck_assert_msg(mean > 120 && mean < 135, "mean %g: %s", (double)mean, out);
    free(out);
    /* 12300 bytes hold a 63x63 image and zeros after it; one byte none */
    snprintf(cmd, sizeof cmd, "%s %s --input-shape x=12300 -o %s/o.onnx --check", xf_test_tool("xflowc"), in, dir);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "check: output 'y'") && !strstr(out, "hold none"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s --version", xf_test_tool("xflow-run"));
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    char formats[128];
    const char *have = xf_runtime_image_formats();
    snprintf(formats, sizeof formats, "ImageDecoder formats:%s\n", have[0] ? have : " none");
    ck_assert_msg(strstr(out, "backends: cpu_ref") && strstr(out, formats), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s %s", xf_test_tool("xflow-run"), in);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "input 'x' is the encoded image an ImageDecoder reads, and 1 bytes hold none") &&
                      strstr(out, "--input-shape x=12301 for a random 64x64 image"),
                  "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("image_decoder");
    TCase *tc = tcase_create("decode");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, lossless_formats);
    tcase_add_test(tc, as_pillow);
    tcase_add_test(tc, bitmaps);
    tcase_add_test(tc, undecodable);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, random_images);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
