/* SPDX-License-Identifier: MIT */
/*
 * png_ink.c: how much of a PNG screenshot is not background, for the HTML
 * report's browser test (check_html.sh): a blank or broken page is (nearly)
 * all one colour. Reads an 8-bit, non-interlaced PNG (grey, grey+alpha, RGB
 * or RGBA, as browsers write screenshots), inflates its image data with the
 * small DEFLATE decoder below (RFC 1950/1951; no zlib, so the tests need no
 * library remat does not), undoes the scanline filters and counts the
 * pixels that differ from the top-left one.
 *
 * usage: png_ink FILE.png MIN_FRACTION
 * Prints "WIDTHxHEIGHT: N of M pixels not background (F)"; exit 0 when F >=
 * MIN_FRACTION, 1 when not, 2 when the file cannot be read as such a PNG.
 *
 * Invariants: every read is bounds-checked against its buffer (a corrupt
 * file ends in exit 2, never a read or write out of bounds); the decoder
 * writes at most the size the header promises.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bits {
    const unsigned char *p;
    size_t n, pos; /* pos counts bits */
    int bad;
} bits_t;

static unsigned getbits(bits_t *b, unsigned k) {
    unsigned v = 0;
    for (unsigned i = 0; i < k; i++) {
        if (b->pos >= b->n * 8) {
            b->bad = 1;
            return 0;
        }
        v |= (unsigned)((b->p[b->pos >> 3] >> (b->pos & 7)) & 1) << i;
        b->pos++;
    }
    return v;
}

/* A canonical Huffman code: how many codes of each length, and the
   symbols in code order. */
typedef struct huff {
    unsigned short count[16];
    unsigned short sym[320];
} huff_t;

static int huff_build(huff_t *h, const unsigned char *len, unsigned n) {
    unsigned short offs[16];
    memset(h->count, 0, sizeof h->count);
    for (unsigned i = 0; i < n; i++) {
        h->count[len[i]]++;
    }
    h->count[0] = 0;
    offs[1] = 0;
    for (unsigned l = 1; l < 15; l++) {
        offs[l + 1] = (unsigned short)(offs[l] + h->count[l]);
    }
    for (unsigned i = 0; i < n; i++) {
        if (len[i]) {
            h->sym[offs[len[i]]++] = (unsigned short)i;
        }
    }
    return 0;
}

/* One symbol: the code's bits arrive first bit first, longest prefix last. */
static int huff_decode(bits_t *b, const huff_t *h) {
    int code = 0, first = 0, index = 0;
    for (unsigned l = 1; l < 16; l++) {
        code |= (int)getbits(b, 1);
        const int count = h->count[l];
        if (code - first < count) {
            return h->sym[index + code - first];
        }
        index += count;
        first = (first + count) << 1;
        code <<= 1;
    }
    b->bad = 1;
    return -1;
}

static const unsigned short len_base[] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                          31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const unsigned char len_extra[] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                          2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const unsigned short dist_base[] = {1,    2,    3,    4,    5,    7,     9,     13,    17,  25,
                                           33,   49,   65,   97,   129,  193,   257,   385,   513, 769,
                                           1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const unsigned char dist_extra[] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                           6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

typedef struct sink {
    unsigned char *p;
    size_t n, cap;
} sink_t;

/* Literals and back-references until the block's end symbol. */
static int inflate_codes(bits_t *b, sink_t *o, const huff_t *lit, const huff_t *dist) {
    for (;;) {
        const int s = huff_decode(b, lit);
        if (b->bad || s < 0) {
            return -1;
        }
        if (s < 256) {
            if (o->n >= o->cap) {
                return -1;
            }
            o->p[o->n++] = (unsigned char)s;
        } else if (s == 256) {
            return 0;
        } else {
            if (s - 257 >= 29) {
                return -1;
            }
            const size_t len = len_base[s - 257] + getbits(b, len_extra[s - 257]);
            const int d = huff_decode(b, dist);
            if (b->bad || d < 0 || d >= 30) {
                return -1;
            }
            const size_t back = dist_base[d] + getbits(b, dist_extra[d]);
            if (b->bad || back > o->n || o->n + len > o->cap) {
                return -1;
            }
            for (size_t i = 0; i < len; i++, o->n++) {
                o->p[o->n] = o->p[o->n - back];
            }
        }
    }
}

static int inflate_fixed(bits_t *b, sink_t *o) {
    unsigned char l[288], d[30];
    for (unsigned i = 0; i < 288; i++) {
        l[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
    }
    memset(d, 5, sizeof d);
    huff_t lit, dist;
    huff_build(&lit, l, 288);
    huff_build(&dist, d, 30);
    return inflate_codes(b, o, &lit, &dist);
}

/* The code lengths of a dynamic block, then its codes. */
static int inflate_dynamic(bits_t *b, sink_t *o) {
    static const unsigned char order[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                            11, 4,  12, 3, 13, 2, 14, 1, 15};
    const unsigned nlit = getbits(b, 5) + 257, ndist = getbits(b, 5) + 1, ncl = getbits(b, 4) + 4;
    unsigned char cl[19] = {0}, lens[320] = {0};
    for (unsigned i = 0; i < ncl; i++) {
        cl[order[i]] = (unsigned char)getbits(b, 3);
    }
    huff_t h, lit, dist;
    huff_build(&h, cl, 19);
    for (unsigned i = 0; i < nlit + ndist && !b->bad;) {
        const int s = huff_decode(b, &h);
        unsigned rep = 0, val = 0;
        if (s < 0) {
            return -1;
        } else if (s < 16) {
            lens[i++] = (unsigned char)s;
            continue;
        } else if (s == 16) {
            if (i == 0) {
                return -1;
            }
            val = lens[i - 1];
            rep = 3 + getbits(b, 2);
        } else {
            rep = s == 17 ? 3 + getbits(b, 3) : 11 + getbits(b, 7);
        }
        if (i + rep > nlit + ndist) {
            return -1;
        }
        while (rep--) {
            lens[i++] = (unsigned char)val;
        }
    }
    if (b->bad || nlit > 288 || ndist > 30) {
        return -1;
    }
    huff_build(&lit, lens, nlit);
    huff_build(&dist, lens + nlit, ndist);
    return inflate_codes(b, o, &lit, &dist);
}

/* A zlib stream (RFC 1950) into @p o; the checksum is not checked (the
   scanline filters catch gross corruption, and this only counts ink). */
static int zlib_inflate(const unsigned char *p, size_t n, sink_t *o) {
    if (n < 2 || (p[0] & 0x0f) != 8 || ((p[0] << 8) | p[1]) % 31) {
        return -1;
    }
    bits_t b = {p + 2, n - 2, 0, 0};
    for (unsigned last = 0; !last;) {
        last = getbits(&b, 1);
        const unsigned type = getbits(&b, 2);
        int rc = -1;
        if (type == 0) {
            b.pos = (b.pos + 7) & ~(size_t)7;
            const unsigned len = getbits(&b, 16), nlen = getbits(&b, 16);
            if (b.bad || (len ^ 0xffff) != nlen || b.pos / 8 + len > b.n || o->n + len > o->cap) {
                return -1;
            }
            memcpy(o->p + o->n, b.p + b.pos / 8, len);
            o->n += len;
            b.pos += (size_t)len * 8;
            rc = 0;
        } else if (type == 1) {
            rc = inflate_fixed(&b, o);
        } else if (type == 2) {
            rc = inflate_dynamic(&b, o);
        }
        if (rc || b.bad) {
            return -1;
        }
    }
    return 0;
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

typedef struct image {
    uint32_t w, h;
    unsigned bpp; /* bytes per pixel */
    unsigned char *idat;
    size_t nidat;
} image_t;

/* The header and the concatenated image data of @p file (@p n bytes). */
static int read_png(const unsigned char *file, size_t n, image_t *im) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (n < 8 || memcmp(file, sig, 8)) {
        return -1;
    }
    for (size_t at = 8; at + 12 <= n;) {
        const uint32_t len = be32(file + at);
        const unsigned char *type = file + at + 4, *data = file + at + 8;
        if (len > n - at - 12) {
            return -1;
        }
        if (!memcmp(type, "IHDR", 4) && len >= 13) {
            static const unsigned channels[] = {[0] = 1, [2] = 3, [4] = 2, [6] = 4};
            im->w = be32(data);
            im->h = be32(data + 4);
            if (data[8] != 8 || data[9] > 6 || !channels[data[9]] || data[12] != 0) {
                return -1; /* not 8-bit, palette, or interlaced */
            }
            im->bpp = channels[data[9]];
        } else if (!memcmp(type, "IDAT", 4)) {
            im->idat = realloc(im->idat, im->nidat + len + 1);
            memcpy(im->idat + im->nidat, data, len);
            im->nidat += len;
        } else if (!memcmp(type, "IEND", 4)) {
            break;
        }
        at += 12 + (size_t)len;
    }
    return im->bpp && im->w && im->h && im->w < 100000 && im->h < 100000 && im->idat ? 0 : -1;
}

static unsigned paeth(int a, int b, int c) {
    const int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return (unsigned)(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

/* Undoes each scanline's filter in place; the rows then start one byte
   after their filter type. */
static int unfilter(unsigned char *px, const image_t *im) {
    const size_t stride = (size_t)im->w * im->bpp;
    for (size_t y = 0; y < im->h; y++) {
        unsigned char *row = px + y * (stride + 1) + 1;
        const unsigned char *up = y ? row - (stride + 1) : NULL;
        const unsigned f = row[-1];
        for (size_t i = 0; i < stride; i++) {
            const int a = i >= im->bpp ? row[i - im->bpp] : 0, b = up ? up[i] : 0;
            const int c = up && i >= im->bpp ? up[i - im->bpp] : 0;
            const unsigned add = f == 0 ? 0 : f == 1 ? (unsigned)a : f == 2 ? (unsigned)b
                                 : f == 3 ? (unsigned)((a + b) / 2) : f == 4 ? paeth(a, b, c) : 256;
            if (add > 255) {
                return -1;
            }
            row[i] = (unsigned char)(row[i] + add);
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: png_ink FILE.png MIN_FRACTION\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    unsigned char *file = NULL;
    size_t n = 0, cap = 0;
    for (size_t got = 1; f && got;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            file = realloc(file, cap);
        }
        got = fread(file + n, 1, cap - n, f);
        n += got;
    }
    image_t im = {0};
    sink_t out = {0};
    int rc = !f || read_png(file, n, &im) ? -1 : 0;
    if (rc == 0) {
        out.cap = (size_t)im.h * ((size_t)im.w * im.bpp + 1);
        out.p = malloc(out.cap);
        rc = zlib_inflate(im.idat, im.nidat, &out) || out.n != out.cap || unfilter(out.p, &im);
    }
    if (rc) {
        fprintf(stderr, "png_ink: %s: not an 8-bit non-interlaced PNG it can read\n", argv[1]);
        return 2;
    }
    const size_t stride = (size_t)im.w * im.bpp + 1;
    const unsigned char *bg = out.p + 1;
    size_t ink = 0;
    for (size_t y = 0; y < im.h; y++) {
        for (size_t x = 0; x < im.w; x++) {
            const unsigned char *q = out.p + y * stride + 1 + x * im.bpp;
            int d = 0;
            for (unsigned c = 0; c < (im.bpp >= 3 ? 3u : 1u); c++) {
                d += abs((int)q[c] - (int)bg[c]);
            }
            ink += d > 24;
        }
    }
    const double frac = (double)ink / ((double)im.w * im.h);
    printf("%ux%u: %zu of %zu pixels not background (%.4f)\n", im.w, im.h, ink,
           (size_t)im.w * im.h, frac);
    fclose(f);
    free(file);
    free(im.idat);
    free(out.p);
    return frac >= atof(argv[2]) ? 0 : 1;
}
