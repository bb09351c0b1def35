#!/usr/bin/env python3
"""Writes the encoded images test_image_decoder.c decodes (with Pillow).

Every lossless file holds the 7 x 5 pattern R = 36 x + 3, G = 50 y + 7,
B = (13 x y + x + 5 y) % 256; the JPEG files (the pattern, and inks: the
pattern's three as C, M, Y and K = R / 2 + G / 3) come with Pillow's
decoding of them as raw RGB (*.rgb), since lossy formats give their
decoder's pixels (extraneous.jpg is pattern.jpg with three bytes before
its start-of-scan marker, which libjpeg warns of and Pillow reads past);
pattern16.pgm holds 256 G + 40 x in 16 bits.  The plain and 16-bit portable maps are written by hand, and
big_header.png is a PNG whose header (with a valid CRC) claims 40000 x
40000 pixels over the pattern's data.  The paletted BMPs are written by
hand: pattern_palette.bmp holds the pattern as 8-bit indices into a
palette of its 35 colours (fewer than 256 entries, as BMP allows),
checker.bmp the checkerboard of checker.pbm in 1 bit; palette_beyond.bmp
and checker_beyond.bmp are them with a palette one entry short; white.bmp
and white4.bmp are white in 1 and 4 bits, their palette of one entry, the
bits after each row's pixels all 1 (which no pixel names).

usage: make_images.py [OUT_DIR]   (default: this script's folder)
"""
import io
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image

W, H = 7, 5


def pattern():
    y, x = np.mgrid[0:H, 0:W]
    return np.stack([36 * x + 3, 50 * y + 7, (13 * x * y + x + 5 * y) % 256], axis=2).astype(np.uint8)


def paletted_bmp(idx, colours, bpp, pad=0):
    """A BMP of bpp-bit indices idx (H x W, top row first) into colours,
    the bits after each row's last pixel all pad."""
    palette = b"".join(bytes([b, g, r, 0]) for r, g, b in colours)
    stride = (W * bpp + 31) // 32 * 4
    rows = []
    for row in idx[::-1]:  # bottom row first
        bits = np.unpackbits(row[:, None], axis=1)[:, 8 - bpp:].ravel()
        rows.append(np.packbits(np.concatenate([bits, np.full(stride * 8 - bits.size, pad, np.uint8)])).tobytes())
    pixels = b"".join(rows)
    offset = 14 + 40 + len(palette)
    info = struct.pack("<IiiHHIIiiII", 40, W, H, 1, bpp, 0, len(pixels), 2835, 2835, len(colours), 0)
    return b"BM" + struct.pack("<IHHI", offset + len(pixels), 0, 0, offset) + info + palette + pixels


def main(out):
    a = pattern()
    im = Image.fromarray(a, "RGB")

    def save(name, img, fmt, **kw):
        with open(os.path.join(out, name), "wb") as f:
            img.save(f, format=fmt, **kw)

    save("pattern.png", im, "PNG")
    save("pattern_palette.png", im.quantize(colors=W * H, method=Image.Quantize.FASTOCTREE, dither=0), "PNG")
    save("pattern_rgba.png", Image.fromarray(np.dstack([a, np.full((H, W), 100, np.uint8)]), "RGBA"), "PNG")
    save("pattern.bmp", im, "BMP")
    save("pattern.tiff", im, "TIFF", compression="tiff_lzw")
    save("pattern.webp", im, "WEBP", lossless=True)
    save("pattern.jp2", im, "JPEG2000")
    # a bare codestream: Pillow writes one for a .j2k name
    buf = io.BytesIO()
    buf.name = "pattern.j2k"
    im.save(buf, format="JPEG2000")
    open(os.path.join(out, "pattern.j2k"), "wb").write(buf.getvalue())
    save("pattern.ppm", im, "PPM")
    with open(os.path.join(out, "pattern_plain.ppm"), "w") as f:
        f.write("P3\n# plain\n%d %d\n255\n" % (W, H))
        f.write("\n".join(" ".join(str(v) for v in row.ravel()) for row in a) + "\n")
    with open(os.path.join(out, "pattern16.pgm"), "wb") as f:  # 256 G + 40 x
        f.write(b"P5\n%d %d\n65535\n" % (W, H))
        f.write((a[:, :, 1].astype(">u2") * 256 + 40 * np.arange(W, dtype=">u2")).astype(">u2").tobytes())
    with open(os.path.join(out, "checker.pbm"), "w") as f:  # plain bitmap, 1 = black
        f.write("P1\n%d %d\n" % (W, H))
        f.write("\n".join(" ".join(str((x + y) % 2) for x in range(W)) for y in range(H)) + "\n")
    ink = Image.fromarray(np.dstack([a, (a[:, :, 0] // 2 + a[:, :, 1] // 3).astype(np.uint8)]), "CMYK")
    for name, img, fmt, kw in [("pattern.jpg", im, "JPEG", {"quality": 90}), ("cmyk.jpg", ink, "JPEG", {"quality": 90}),
                               ("cmyk.tiff", ink, "TIFF", {"compression": "tiff_lzw"})]:
        save(name, img, fmt, **kw)
        dec = Image.open(os.path.join(out, name)).convert("RGB")
        open(os.path.join(out, name.replace(".", "_") + ".rgb"), "wb").write(np.asarray(dec).tobytes())
    jpg = open(os.path.join(out, "pattern.jpg"), "rb").read()  # bytes before its SOS: a warning, the same pixels
    sos = jpg.find(b"\xff\xda")
    open(os.path.join(out, "extraneous.jpg"), "wb").write(jpg[:sos] + b"\x00\x11\x22" + jpg[sos:])
    idx = np.arange(W * H, dtype=np.uint8).reshape(H, W)
    open(os.path.join(out, "pattern_palette.bmp"), "wb").write(paletted_bmp(idx, a.reshape(-1, 3), 8))
    idx[-1, -1] = W * H
    open(os.path.join(out, "palette_beyond.bmp"), "wb").write(paletted_bmp(idx, a.reshape(-1, 3), 8))
    y, x = np.mgrid[0:H, 0:W]
    odd = ((x + y) % 2).astype(np.uint8)
    open(os.path.join(out, "checker.bmp"), "wb").write(paletted_bmp(odd, [(255, 255, 255), (0, 0, 0)], 1))
    open(os.path.join(out, "checker_beyond.bmp"), "wb").write(paletted_bmp(odd, [(255, 255, 255)], 1))
    for name, bpp in [("white.bmp", 1), ("white4.bmp", 4)]:
        open(os.path.join(out, name), "wb").write(paletted_bmp(odd * 0, [(255, 255, 255)], bpp, pad=1))
    png = open(os.path.join(out, "pattern.png"), "rb").read()
    ihdr = struct.pack(">IIBBBBB", 40000, 40000, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    big = png[:8] + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk)) + png[33:]
    open(os.path.join(out, "big_header.png"), "wb").write(big)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
