/* gentext: deterministic pseudo-random English-like text, for the gzip benchmark.
 *
 * Usage: gentext BYTES > FILE
 *
 * A fixed-seed xorshift generator builds a vocabulary of 16384 words (2-12 letters) and then
 * writes words drawn with a skewed (roughly Zipf-like) distribution, with punctuation and lines
 * of at most 72 characters, until BYTES bytes have been written. The same BYTES always gives the
 * same output, on every machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long s = 0x2545f4914f6cdd1dULL;

static unsigned long long next(void) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

#define WORDS 16384

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gentext BYTES\n");
        return 2;
    }
    long long want = atoll(argv[1]);
    static char vocab[WORDS][16];
    static const char letters[] = "etaoinshrdlcumwfgypbvkjxqz";
    for (int i = 0; i < WORDS; i++) {
        int len = 2 + (int)(next() % 11);
        for (int j = 0; j < len; j++) {
            /* Favour frequent letters: the smaller of two draws. */
            unsigned a = (unsigned)(next() % 26), b = (unsigned)(next() % 26);
            vocab[i][j] = letters[a < b ? a : b];
        }
        vocab[i][len] = 0;
    }
    static char out[1 << 16];
    size_t used = 0;
    long long written = 0;
    int col = 0, sentence_start = 1;
    while (written < want) {
        /* Skewed choice: the product of two uniforms favours small indices. */
        unsigned long long u = next() % WORDS, v = next() % WORDS;
        const char *w = vocab[(u * v) / WORDS];
        int len = (int)strlen(w);
        char word[24];
        memcpy(word, w, (size_t)len);
        if (sentence_start)
            word[0] = (char)(word[0] - 'a' + 'A');
        sentence_start = 0;
        unsigned long long p = next() % 100;
        if (p < 6) {
            word[len++] = '.';
            sentence_start = 1;
        } else if (p < 12) {
            word[len++] = ',';
        }
        if (col + 1 + len > 72) {
            out[used++] = '\n';
            col = 0;
        } else if (col > 0) {
            out[used++] = ' ';
            col++;
        }
        memcpy(out + used, word, (size_t)len);
        used += (size_t)len;
        col += len;
        if (used > sizeof out - 64) {
            fwrite(out, 1, used, stdout);
            written += (long long)used;
            used = 0;
        }
    }
    out[used++] = '\n';
    fwrite(out, 1, used, stdout);
    return ferror(stdout) ? 1 : 0;
}
