/* ONNX's ImageDecoder (opset 20) on the host backends (ml_ops.c
 * dispatches it): the bytes of one encoded image to a uint8 tensor
 * [H, W, C] in channel-last order, C 3 for RGB and BGR and 1 for
 * Grayscale.  Each format is decoded by its own library, found when the
 * project is configured: JPEG by libjpeg(-turbo) (islow IDCT and its
 * "fancy" chroma upsampling, as the operator's definition asks), PNG by
 * libpng (palettes and low bit depths expanded, 16-bit samples to their
 * high byte, alpha dropped), TIFF by libtiff (its RGBA reading, so every
 * photometric kind; 8-bit CMYK in strips by scanlines, rounded as Pillow
 * rounds), WebP by libwebp, JPEG 2000 (JP2 files and bare
 * codestreams) by OpenJPEG (on several threads for streams of 64 KiB
 * and more), the portable formats (PBM, PGM, PPM, plain
 * or raw) by netpbm and BMP by stb_image.  The format is told from
 * the first bytes, not from anything the node says.  Grayscale is
 * computed from RGB with Pillow's weights (L = (19595 R + 38470 G + 7471
 * B + 2^15) >> 16), so gray sources give their own values back.  As the
 * operator's definition says, bytes that do not decode (an unknown
 * format, a corrupt or truncated stream, a format whose library this
 * build lacks, a header claiming more pixels than memory holds) give an
 * empty image, [0, 0, C]; an image larger than the session's tensor limit
 * is an error. */
#include "ml_ops.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef XF_HAVE_JPEG
#include <jpeglib.h>
#include <jerror.h> /* after jpeglib.h: the warnings' codes */
#endif
#ifdef XF_HAVE_PNG
#include <png.h>
#endif
#ifdef XF_HAVE_TIFF
#include <tiffio.h>
#endif
#ifdef XF_HAVE_WEBP
#include <webp/decode.h>
#endif
#ifdef XF_HAVE_OPENJP2
#include <openjpeg.h>
#endif
#ifdef XF_HAVE_NETPBM
#include <netpbm/pam.h>
#include <pthread.h>
#endif
#ifdef XF_HAVE_STB
#include <stb_image.h>
#endif

/* decoded; not decodable; over the session's limit; out of memory (which
 * the operator counts as not decodable: "for any reason") */
typedef enum img_status { IMG_OK, IMG_BAD, IMG_TOO_LARGE, IMG_NOMEM } img_status;

/* One decoded image: h rows of w RGB pixels, decoded straight into the
 * tensor [h, w, 3] that will be the output (rgb its data). */
typedef struct img {
    int64_t h, w;
    xf_tensor *t;
    uint8_t *rgb;
} img;

/* A stream the libraries with read callbacks read from. */
typedef struct mem_reader {
    const uint8_t *p;
    size_t n, off;
} mem_reader;

/* Allocates im's pixels for w x h, within max bytes (0: no limit). */
static img_status img_alloc(img *im, uint64_t w, uint64_t h, size_t max)
{
    /* no format holds more than 2^31 rows or columns, and no image is a
     * TiB: such a header is corrupt */
    if (!w || !h || w > (UINT64_C(1) << 31) || h > (UINT64_C(1) << 31) || w * h > (UINT64_C(1) << 40) / 3)
        return IMG_BAD;
    im->w = (int64_t)w;
    im->h = (int64_t)h;
    if (max && w * h * 3 > max)
        return IMG_TOO_LARGE;
    im->t = xf_tensor_create(XF_DT_UINT8, &(xf_shape){3, {(int64_t)h, (int64_t)w, 3}});
    im->rgb = im->t ? im->t->data : NULL;
    return im->t ? IMG_OK : IMG_NOMEM;
}

/* One RGB channel of a CMYK pixel from the paper left by the ink, v = 255 -
 * C, and by the black, k = 255 - K: v k / 255 rounded, as Pillow converts
 * CMYK to RGB (nk - MULDIV255(C, nk), the same for every v and k). */
static inline uint8_t ink_to_rgb(unsigned v, unsigned k) { return (uint8_t)((v * k + 127) / 255); }

/* ------------------------------------------------------------------ JPEG */

#ifdef XF_HAVE_JPEG
typedef struct jpeg_fail_mgr {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    bool in_header; /* reading the markers before the first scan */
} jpeg_fail_mgr;

static void jpeg_fail(j_common_ptr c) { longjmp(((jpeg_fail_mgr *)c->err)->jb, 1); }
/* A warning (level -1) is corrupt data, which libjpeg would complete
 * with made-up or unwritten pixels: the stream does not decode.  Three
 * are not, while the header is read (before any coded pixel): bytes
 * before a marker, an unknown JFIF revision or Adobe transform; Pillow
 * decodes such files, and so do we.  Bytes before a marker met later
 * follow a scan whose coded data went wrong. */
static void jpeg_warn(j_common_ptr c, int level)
{
    int code = c->err->msg_code;
    bool harmless = code == JWRN_EXTRANEOUS_DATA || code == JWRN_JFIF_MAJOR || code == JWRN_ADOBE_XFORM;
    if (level < 0 && !(harmless && ((jpeg_fail_mgr *)c->err)->in_header))
        jpeg_fail(c);
}

static img_status decode_jpeg(const uint8_t *p, size_t n, size_t max, img *im)
{
    struct jpeg_decompress_struct c;
    jpeg_fail_mgr e;
    uint8_t *volatile row = NULL;
    volatile img_status st = IMG_BAD;
    c.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = jpeg_fail;
    e.pub.emit_message = jpeg_warn;
    if (setjmp(e.jb)) {
        jpeg_destroy_decompress(&c);
        free(row);
        return st;
    }
    jpeg_create_decompress(&c);
    jpeg_mem_src(&c, p, (unsigned long)n);
    e.in_header = true;
    jpeg_read_header(&c, TRUE);
    e.in_header = false;
    bool cmyk = c.jpeg_color_space == JCS_CMYK || c.jpeg_color_space == JCS_YCCK;
    c.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(&c);
    st = img_alloc(im, c.output_width, c.output_height, max);
    if (st == IMG_OK && !(row = malloc((size_t)c.output_width * 4)))
        st = IMG_NOMEM;
    if (st != IMG_OK)
        longjmp(e.jb, 1);
    st = IMG_BAD; /* a failure from here on is the stream's */
    while (c.output_scanline < c.output_height) {
        uint8_t *dst = im->rgb + (size_t)c.output_scanline * (size_t)im->w * 3;
        JSAMPROW r = cmyk ? row : dst;
        jpeg_read_scanlines(&c, &r, 1);
        /* CMYK as ink amounts (stored inverted where an Adobe marker says
         * so, as Photoshop writes them): each channel (255 - C)(255 - K). */
        for (int64_t x = 0; cmyk && x < im->w; x++)
            for (int k = 0; k < 3; k++) {
                unsigned v = row[x * 4 + k], kk = row[x * 4 + 3];
                if (!c.saw_Adobe_marker) {
                    v = 255 - v;
                    kk = 255 - kk;
                }
                dst[x * 3 + k] = ink_to_rgb(v, kk);
            }
    }
    jpeg_finish_decompress(&c);
    jpeg_destroy_decompress(&c);
    free(row);
    return IMG_OK;
}
#endif

/* ------------------------------------------------------------------ PNG */

#ifdef XF_HAVE_PNG
static void png_fail(png_structp png, png_const_charp msg)
{
    (void)msg;
    png_longjmp(png, 1);
}
static void png_quiet(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}
static void png_read_mem(png_structp png, png_bytep out, size_t len)
{
    mem_reader *r = png_get_io_ptr(png);
    if (len > r->n - r->off)
        png_error(png, "truncated");
    memcpy(out, r->p + r->off, len);
    r->off += len;
}

static img_status decode_png(const uint8_t *p, size_t n, size_t max, img *im)
{
    mem_reader r = {p, n, 0};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, png_fail, png_quiet);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    uint8_t **volatile rows = NULL;
    volatile img_status st = IMG_BAD;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return IMG_NOMEM;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(rows);
        return st;
    }
    png_set_read_fn(png, &r, png_read_mem);
    png_read_info(png, info);
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    uint32_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    if (png_get_rowbytes(png, info) != (size_t)w * 3)
        longjmp(png_jmpbuf(png), 1);
    st = img_alloc(im, w, h, max);
    if (st == IMG_OK && !(rows = malloc(sizeof *rows * h)))
        st = IMG_NOMEM;
    if (st != IMG_OK)
        longjmp(png_jmpbuf(png), 1);
    st = IMG_BAD;
    for (uint32_t y = 0; y < h; y++)
        rows[y] = im->rgb + (size_t)y * w * 3;
    png_read_image(png, rows);
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    return IMG_OK;
}
#endif

/* ------------------------------------------------------------------ TIFF */

#ifdef XF_HAVE_TIFF
static tmsize_t tiff_read(thandle_t h, void *buf, tmsize_t len)
{
    mem_reader *r = h;
    size_t k = len < 0 ? 0 : (size_t)len;
    if (k > r->n - r->off)
        k = r->n - r->off;
    memcpy(buf, r->p + r->off, k);
    r->off += k;
    return (tmsize_t)k;
}
static tmsize_t tiff_write(thandle_t h, void *buf, tmsize_t len)
{
    (void)h;
    (void)buf;
    (void)len;
    return -1;
}
static toff_t tiff_seek(thandle_t h, toff_t off, int whence)
{
    mem_reader *r = h;
    uint64_t base = whence == SEEK_CUR ? r->off : whence == SEEK_END ? r->n : 0;
    if (off > UINT64_MAX - base || base + off > r->n)
        return (toff_t)-1;
    r->off = (size_t)(base + off);
    return r->off;
}
static int tiff_close(thandle_t h)
{
    (void)h;
    return 0;
}
static toff_t tiff_size(thandle_t h) { return ((mem_reader *)h)->n; }
static int tiff_quiet(TIFF *t, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)t;
    (void)user;
    (void)module;
    (void)fmt;
    (void)ap;
    return 1;
}

/* An 8-bit CMYK TIFF in strips, row by row: libtiff's RGBA reading
 * rounds the inks' product down, Pillow to nearest (ink_to_rgb). */
static img_status tiff_cmyk(TIFF *t, uint32_t w, uint32_t h, uint16_t spp, img *im)
{
    tmsize_t size = TIFFScanlineSize(t);
    if (size < (tmsize_t)w * spp)
        return IMG_BAD;
    uint8_t *row = malloc((size_t)size);
    if (!row)
        return IMG_NOMEM;
    img_status st = IMG_OK;
    for (uint32_t y = 0; st == IMG_OK && y < h; y++) {
        if (TIFFReadScanline(t, row, y, 0) < 0)
            st = IMG_BAD;
        uint8_t *dst = im->rgb + (size_t)y * w * 3;
        for (uint32_t x = 0; st == IMG_OK && x < w; x++)
            for (int k = 0; k < 3; k++)
                dst[x * 3 + k] = ink_to_rgb(255u - row[(size_t)x * spp + k], 255u - row[(size_t)x * spp + 3]);
    }
    free(row);
    return st;
}

static img_status decode_tiff(const uint8_t *p, size_t n, size_t max, img *im)
{
    mem_reader r = {p, n, 0};
    TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
    if (!o)
        return IMG_NOMEM;
    TIFFOpenOptionsSetErrorHandlerExtR(o, tiff_quiet, NULL);
    TIFFOpenOptionsSetWarningHandlerExtR(o, tiff_quiet, NULL);
    if (max)
        TIFFOpenOptionsSetMaxSingleMemAlloc(o, (tmsize_t)(max < INT64_MAX / 2 ? max * 2 : INT64_MAX));
    TIFF *t = TIFFClientOpenExt("image", "rm", &r, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size, NULL,
                                NULL, o);
    TIFFOpenOptionsFree(o);
    if (!t)
        return IMG_BAD;
    uint32_t w = 0, h = 0;
    TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
    img_status st = img_alloc(im, w, h, max);
    uint16_t photometric = 0, bits = 0, spp = 0, planar = 0, inks = 0;
    TIFFGetFieldDefaulted(t, TIFFTAG_PHOTOMETRIC, &photometric);
    TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bits);
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(t, TIFFTAG_INKSET, &inks);
    if (st == IMG_OK && photometric == PHOTOMETRIC_SEPARATED && bits == 8 && spp >= 4 &&
        planar == PLANARCONFIG_CONTIG && inks == INKSET_CMYK && !TIFFIsTiled(t)) {
        st = tiff_cmyk(t, w, h, spp, im);
        TIFFClose(t);
        return st;
    }
    uint32_t *px = st == IMG_OK ? malloc((size_t)w * h * 4) : NULL;
    if (st == IMG_OK && !px)
        st = IMG_NOMEM;
    if (st == IMG_OK && !TIFFReadRGBAImageOriented(t, w, h, px, ORIENTATION_TOPLEFT, 1))
        st = IMG_BAD;
    for (size_t k = 0; st == IMG_OK && k < (size_t)w * h; k++) {
        im->rgb[k * 3] = (uint8_t)TIFFGetR(px[k]);
        im->rgb[k * 3 + 1] = (uint8_t)TIFFGetG(px[k]);
        im->rgb[k * 3 + 2] = (uint8_t)TIFFGetB(px[k]);
    }
    free(px);
    TIFFClose(t);
    return st;
}
#endif

/* ------------------------------------------------------------------ WebP */

#ifdef XF_HAVE_WEBP
static img_status decode_webp(const uint8_t *p, size_t n, size_t max, img *im)
{
    int w, h;
    if (!WebPGetInfo(p, n, &w, &h) || w <= 0 || h <= 0)
        return IMG_BAD;
    img_status st = img_alloc(im, (uint64_t)w, (uint64_t)h, max);
    if (st == IMG_OK && !WebPDecodeRGBInto(p, n, im->rgb, (size_t)w * h * 3, w * 3))
        st = IMG_BAD;
    return st;
}
#endif

/* ------------------------------------------------------------------ JPEG 2000 */

#ifdef XF_HAVE_OPENJP2
static OPJ_SIZE_T opj_read(void *buf, OPJ_SIZE_T len, void *user)
{
    mem_reader *r = user;
    if (r->off >= r->n)
        return (OPJ_SIZE_T)-1;
    size_t k = len < r->n - r->off ? len : r->n - r->off;
    memcpy(buf, r->p + r->off, k);
    r->off += k;
    return k;
}
static OPJ_OFF_T opj_skip(OPJ_OFF_T len, void *user)
{
    mem_reader *r = user;
    if (len < 0 || (uint64_t)len > r->n - r->off)
        return -1;
    r->off += (size_t)len;
    return len;
}
static OPJ_BOOL opj_seek(OPJ_OFF_T off, void *user)
{
    mem_reader *r = user;
    if (off < 0 || (uint64_t)off > r->n)
        return OPJ_FALSE;
    r->off = (size_t)off;
    return OPJ_TRUE;
}
static void opj_quiet(const char *msg, void *user)
{
    (void)msg;
    (void)user;
}

/* Sample x, y of component c as 8 bits: signed samples offset to
 * unsigned, deeper ones shifted down, shallower ones scaled up. */
static uint8_t opj_sample(const opj_image_comp_t *c, int64_t x, int64_t y)
{
    int64_t cx = x / (c->dx ? c->dx : 1), cy = y / (c->dy ? c->dy : 1);
    if (cx >= c->w)
        cx = c->w - 1;
    if (cy >= c->h)
        cy = c->h - 1;
    int64_t v = c->data[cy * c->w + cx];
    if (c->sgnd)
        v += INT64_C(1) << (c->prec - 1);
    int64_t top = (INT64_C(1) << c->prec) - 1;
    v = v < 0 ? 0 : v > top ? top : v;
    return (uint8_t)(c->prec >= 8 ? v >> (c->prec - 8) : (v * 255 + top / 2) / top);
}

static img_status decode_jpeg2000(const uint8_t *p, size_t n, bool jp2, size_t max, img *im)
{
    mem_reader r = {p, n, 0};
    opj_codec_t *codec = opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
    opj_stream_t *s = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
    opj_image_t *image = NULL;
    img_status st = codec && s ? IMG_OK : IMG_NOMEM;
    if (st == IMG_OK) {
        opj_set_error_handler(codec, opj_quiet, NULL);
        opj_set_warning_handler(codec, opj_quiet, NULL);
        opj_set_info_handler(codec, opj_quiet, NULL);
        opj_dparameters_t params;
        opj_set_default_decoder_parameters(&params);
        opj_stream_set_user_data(s, &r, NULL);
        opj_stream_set_user_data_length(s, n);
        opj_stream_set_read_function(s, opj_read);
        opj_stream_set_skip_function(s, opj_skip);
        opj_stream_set_seek_function(s, opj_seek);
        if (!opj_setup_decoder(codec, &params))
            st = IMG_BAD;
#ifdef _OPENMP
        /* code-blocks decoded by as many threads as the cpu backend's loops
         * take, for streams large enough to pay for starting them (0.3 ms) */
        if (st == IMG_OK && omp_get_max_threads() > 1 && n >= 65536)
            opj_codec_set_threads(codec, omp_get_max_threads());
#endif
        if (st == IMG_OK && !opj_read_header(s, codec, &image))
            st = IMG_BAD;
    }
    /* only gray (one component, or two with alpha) and colour (three, or
     * more with alpha or extra channels) */
    if (st == IMG_OK && (image->x1 <= image->x0 || image->y1 <= image->y0 || image->numcomps < 1))
        st = IMG_BAD;
    uint64_t w = st == IMG_OK ? image->x1 - image->x0 : 0, h = st == IMG_OK ? image->y1 - image->y0 : 0;
    im->w = (int64_t)w;
    im->h = (int64_t)h;
    /* as img_alloc judges headers; every component decoded as int32 */
    if (st == IMG_OK && (w > (UINT64_C(1) << 31) || h > (UINT64_C(1) << 31) || w * h > (UINT64_C(1) << 40) / 3))
        st = IMG_BAD;
    if (st == IMG_OK && max && (double)w * (double)h * 4 * image->numcomps > 2.0 * (double)max)
        st = IMG_TOO_LARGE;
    if (st == IMG_OK && !(opj_decode(codec, s, image) && opj_end_decompress(codec, s)))
        st = IMG_BAD;
    int gray = st == IMG_OK && image->numcomps < 3;
    for (uint32_t k = 0; st == IMG_OK && k < (gray ? 1u : 3u); k++) {
        const opj_image_comp_t *c = &image->comps[k];
        if (!c->data || c->prec < 1 || c->prec > 31 || !c->w || !c->h)
            st = IMG_BAD;
    }
    if (st == IMG_OK)
        st = img_alloc(im, w, h, max);
    for (int64_t y = 0; st == IMG_OK && y < (int64_t)h; y++)
        for (int64_t x = 0; x < (int64_t)w; x++)
            for (int k = 0; k < 3; k++)
                im->rgb[((size_t)y * w + (size_t)x) * 3 + (size_t)k] = opj_sample(&image->comps[gray ? 0 : k], x, y);
    if (image)
        opj_image_destroy(image);
    if (s)
        opj_stream_destroy(s);
    if (codec)
        opj_destroy_codec(codec);
    return st;
}
#endif

/* ------------------------------------------------------------------ PBM, PGM, PPM */

#ifdef XF_HAVE_NETPBM
/* netpbm reports errors through one process-wide jump buffer. */
static pthread_mutex_t pnm_lock = PTHREAD_MUTEX_INITIALIZER;

static void pnm_quiet(const char *msg) { (void)msg; }

static img_status decode_pnm_locked(FILE *f, size_t max, img *im)
{
    jmp_buf jb, *saved;
    struct pam pam;
    tuple *volatile row = NULL;
    volatile img_status st = IMG_BAD;
    pm_setjmpbufsave(&jb, &saved);
    if (setjmp(jb)) {
        if (row)
            pnm_freepamrow(row);
        pm_setjmpbuf(saved);
        return st;
    }
    /* netpbm's PAM_STRUCT_SIZE(tuple_type), without its null pointer */
    pnm_readpaminit(f, &pam, (int)(offsetof(struct pam, tuple_type) + sizeof pam.tuple_type));
    st = pam.depth < 1 || pam.maxval < 1 ? IMG_BAD : img_alloc(im, (uint64_t)pam.width, (uint64_t)pam.height, max);
    if (st == IMG_OK && !(row = pnm_allocpamrow(&pam)))
        st = IMG_NOMEM;
    if (st != IMG_OK)
        longjmp(jb, 1);
    st = IMG_BAD;
    size_t row_bytes = (size_t)pam.width * (size_t)pam.depth;
    if (pam.format == RPPM_FORMAT && pam.maxval == 255) { /* raw bytes as they are: the rows in one read */
        pnm_freepamrow(row);
        row = NULL;
        if (fread(im->rgb, 1, row_bytes * (size_t)pam.height, f) != row_bytes * (size_t)pam.height)
            longjmp(jb, 1);
        pm_setjmpbuf(saved);
        return IMG_OK;
    }
    unsigned colour = pam.depth >= 3;
    for (int y = 0; y < pam.height; y++) {
        pnm_readpamrow(&pam, row);
        for (int x = 0; x < pam.width; x++)
            for (unsigned k = 0; k < 3; k++) {
                sample v = row[x][colour ? k : 0];
                im->rgb[((size_t)y * (size_t)pam.width + (size_t)x) * 3 + k] =
                    (uint8_t)((v * 255 + pam.maxval / 2) / pam.maxval);
            }
    }
    pnm_freepamrow(row);
    pm_setjmpbuf(saved);
    return IMG_OK;
}

static img_status decode_pnm(const uint8_t *p, size_t n, size_t max, img *im)
{
    FILE *f = fmemopen((void *)p, n, "rb");
    if (!f)
        return IMG_NOMEM;
    pthread_mutex_lock(&pnm_lock);
    pm_setusererrormsgfn(pnm_quiet);
    pm_setusermessagefn(pnm_quiet);
    img_status st = decode_pnm_locked(f, max, im);
    pthread_mutex_unlock(&pnm_lock);
    fclose(f);
    return st;
}
#endif

/* ------------------------------------------------------------------ BMP */

#ifdef XF_HAVE_STB
/* A byte of the stream as stb_image reads it: 0 past its end. */
static unsigned bmp_byte(const uint8_t *p, size_t n, int64_t at) { return at >= 0 && (size_t)at < n ? p[at] : 0; }
static int64_t bmp_le(const uint8_t *p, size_t n, int64_t at, int bytes)
{
    uint32_t v = 0;
    for (int k = bytes - 1; k >= 0; k--)
        v = v << 8 | bmp_byte(p, n, at + k);
    return bytes == 4 ? (int32_t)v : (int64_t)v;
}

/* Whether every pixel of a paletted BMP (1, 4 or 8 bits; stb_image reads
 * them uncompressed only) names an entry of its palette.  stb_image takes
 * the palette to fill the bytes between the header and the pixels (the
 * entries a file lists need not reach 2^bits) and would give a pixel
 * beyond them from its own unwritten stack: corrupt data, which does not
 * decode.  The sizes are stb_image's, read the way it reads them. */
static bool bmp_palette_covers(const uint8_t *p, size_t n, int64_t w, int64_t h)
{
    int64_t offset = bmp_le(p, n, 10, 4), hsz = bmp_le(p, n, 14, 4);
    int bpp = (int)bmp_le(p, n, hsz == 12 ? 24 : 28, 2);
    if (bpp >= 16)
        return true;
    int64_t entries = hsz == 12 ? (offset - 38) / 3 : (offset - 14 - hsz) / 4;
    if (entries <= 0)
        return false;
    /* stb_image refuses other depths below 16 */
    if (entries >= (int64_t)1 << bpp || (bpp != 1 && bpp != 4 && bpp != 8))
        return true;
    int64_t width = bpp == 1 ? (w + 7) / 8 : bpp == 4 ? (w + 1) / 2 : w, stride = (width + 3) / 4 * 4;
    /* past the file's end every byte reads 0, entry 0 (entries > 0): the
     * scan stops there, whatever size the header claims */
    for (int64_t y = 0; y < h && offset + y * stride < (int64_t)n; y++)
        for (int64_t x = 0; x < w && offset + y * stride + x * bpp / 8 < (int64_t)n; x++) {
            unsigned b = bmp_byte(p, n, offset + y * stride + x * bpp / 8);
            unsigned v = bpp == 8 ? b : bpp == 4 ? (x % 2 ? b & 15 : b >> 4) : (b >> (7 - x % 8)) & 1;
            if (v >= entries)
                return false;
        }
    return true;
}

static img_status decode_bmp(const uint8_t *p, size_t n, size_t max, img *im)
{
    int w, h, comp;
    if (n > INT32_MAX || !stbi_info_from_memory(p, (int)n, &w, &h, &comp) || w <= 0 || h <= 0)
        return IMG_BAD;
    /* rows of pixels the file cannot hold (stb_image would read them as
     * zeros; Pillow calls such a file truncated): a header may claim
     * billions of pixels in a few bytes */
    int64_t offset = bmp_le(p, n, 10, 4), hsz = bmp_le(p, n, 14, 4);
    int64_t bpp = bmp_le(p, n, hsz == 12 ? 24 : 28, 2), row = ((int64_t)w * bpp + 31) / 32 * 4;
    if (offset < 0 || offset > (int64_t)n || (row > 0 && h > ((int64_t)n - offset) / row))
        return IMG_BAD;
    if (!bmp_palette_covers(p, n, w, h))
        return IMG_BAD;
    img_status st = img_alloc(im, (uint64_t)w, (uint64_t)h, max);
    uint8_t *px = st == IMG_OK ? stbi_load_from_memory(p, (int)n, &w, &h, &comp, 3) : NULL;
    if (st == IMG_OK && !px)
        st = IMG_BAD;
    if (st == IMG_OK && (w != im->w || h != im->h))
        st = IMG_BAD;
    if (st == IMG_OK)
        memcpy(im->rgb, px, (size_t)w * (size_t)h * 3);
    stbi_image_free(px);
    return st;
}
#endif

/* ------------------------------------------------------------------ the op */

enum { FMT_NONE, FMT_JPEG, FMT_PNG, FMT_TIFF, FMT_WEBP, FMT_JP2, FMT_J2K, FMT_PNM, FMT_BMP };

static int sniff(const uint8_t *p, size_t n)
{
    static const uint8_t png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const uint8_t jp2[12] = {0, 0, 0, 12, 'j', 'P', ' ', ' ', '\r', '\n', 0x87, '\n'};
    if (n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff)
        return FMT_JPEG;
    if (n >= 8 && !memcmp(p, png, 8))
        return FMT_PNG;
    if (n >= 4 && (!memcmp(p, "II*\0", 4) || !memcmp(p, "MM\0*", 4) || !memcmp(p, "II+\0", 4) ||
                   !memcmp(p, "MM\0+", 4)))
        return FMT_TIFF;
    if (n >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4))
        return FMT_WEBP;
    if (n >= 12 && !memcmp(p, jp2, 12))
        return FMT_JP2;
    if (n >= 4 && p[0] == 0xff && p[1] == 0x4f && p[2] == 0xff && p[3] == 0x51)
        return FMT_J2K;
    /* the portable maps the operator names; not PAM (P7), whose header
     * netpbm's reader leaks when it is malformed */
    if (n >= 2 && p[0] == 'P' && p[1] >= '1' && p[1] <= '6')
        return FMT_PNM;
    if (n >= 2 && p[0] == 'B' && p[1] == 'M')
        return FMT_BMP;
    return FMT_NONE;
}

static img_status decode(const uint8_t *p, size_t n, size_t max, img *im)
{
    (void)max;
    switch (sniff(p, n)) {
#ifdef XF_HAVE_JPEG
    case FMT_JPEG: return decode_jpeg(p, n, max, im);
#endif
#ifdef XF_HAVE_PNG
    case FMT_PNG: return decode_png(p, n, max, im);
#endif
#ifdef XF_HAVE_TIFF
    case FMT_TIFF: return decode_tiff(p, n, max, im);
#endif
#ifdef XF_HAVE_WEBP
    case FMT_WEBP: return decode_webp(p, n, max, im);
#endif
#ifdef XF_HAVE_OPENJP2
    case FMT_JP2:
    case FMT_J2K: return decode_jpeg2000(p, n, sniff(p, n) == FMT_JP2, max, im);
#endif
#ifdef XF_HAVE_NETPBM
    case FMT_PNM: return decode_pnm(p, n, max, im);
#endif
#ifdef XF_HAVE_STB
    case FMT_BMP: return decode_bmp(p, n, max, im);
#endif
    default: return IMG_BAD;
    }
}

const char *xf_runtime_image_formats(void)
{
    return ""
#ifdef XF_HAVE_JPEG
           " jpeg"
#endif
#ifdef XF_HAVE_PNG
           " png"
#endif
#ifdef XF_HAVE_TIFF
           " tiff"
#endif
#ifdef XF_HAVE_WEBP
           " webp"
#endif
#ifdef XF_HAVE_OPENJP2
           " jpeg2000"
#endif
#ifdef XF_HAVE_NETPBM
           " pnm"
#endif
#ifdef XF_HAVE_STB
           " bmp"
#endif
        ;
}

xf_status xf_image_check(const xf_node *n, xf_error *err)
{
    const char *f = xf_ml_string(n, "pixel_format", "RGB");
    if (strcmp(f, "RGB") && strcmp(f, "BGR") && strcmp(f, "Grayscale"))
        return xf_ml_fail(n, err, XF_ERR_INVALID, "pixel_format '%s' is none of RGB, BGR, Grayscale", f);
    return XF_OK;
}

xf_status xf_image_decode(const xf_node *n, size_t max_bytes, const xf_tensor *x, xf_tensor **out, xf_error *err)
{
    if (x->dtype != XF_DT_UINT8)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "encoded_stream is %s; it takes uint8 bytes",
                          xf_dtype_name(x->dtype));
    const char *f = xf_ml_string(n, "pixel_format", "RGB");
    bool gray = !strcmp(f, "Grayscale"), bgr = !strcmp(f, "BGR");
    img im = {0, 0, NULL, NULL};
    int64_t len = xf_shape_numel(&x->shape);
    img_status st = len > 0 ? decode(x->data, (size_t)len, max_bytes, &im) : IMG_BAD;
    if (st == IMG_TOO_LARGE) {
        xf_tensor_release(im.t);
        return xf_ml_fail(n, err, XF_ERR_NOMEM, "the image is %lld x %lld pixels, beyond this session's tensor limit",
                          (long long)im.w, (long long)im.h);
    }
    if (st != IMG_OK) {
        xf_tensor_release(im.t);
        im = (img){0, 0, NULL, NULL};
    }
    if (im.t && !gray) { /* the decoded tensor itself, BGR swapped in place */
        for (size_t k = 0; bgr && k < (size_t)(im.h * im.w); k++) {
            uint8_t r = im.rgb[k * 3];
            im.rgb[k * 3] = im.rgb[k * 3 + 2];
            im.rgb[k * 3 + 2] = r;
        }
        out[0] = im.t;
        return XF_OK;
    }
    xf_shape s = {.ndim = 3, .dims = {im.h, im.w, gray ? 1 : 3}};
    xf_tensor *y = xf_tensor_create_unset(XF_DT_UINT8, &s);
    if (!y) {
        xf_tensor_release(im.t);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    uint8_t *d = y->data;
    for (size_t k = 0; k < (size_t)(im.h * im.w); k++) {
        const uint8_t *px = im.rgb + k * 3;
        d[k] = (uint8_t)((px[0] * 19595u + px[1] * 38470u + px[2] * 7471u + 0x8000u) >> 16);
    }
    xf_tensor_release(im.t);
    out[0] = y;
    return XF_OK;
}
