#!/usr/bin/env python3
"""Writes script.json: the scripted generator replies of kpilot lineage's host end-to-end test
(tests/lineage/lineage_cli_test.cc), in the order the walk asks for them. Line numbers of the
citations are looked up in the kernel files here, so the script stays right when they change.

    python3 tests/lineage/host_sgemm/make_script.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
EXPERT = "../../../examples/host/sgemm/candidates/register_tile_expert.cpp"
REFERENCE = "../../../examples/host/sgemm/reference.cpp"
HELD_OUT_FAST = "admit_row_softmax_simd.cpp"


def lines(f):
    return open(os.path.join(HERE, f)).read().split("\n")


def cite(side, f, text):
    hits = [i + 1 for i, l in enumerate(lines(f)) if l == text]
    assert len(hits) == 1, (f, text, hits)
    return {"side": side, "line": hits[0], "text": text.strip()}


def block(obj):
    return "```json\n" + json.dumps(obj, indent=2) + "\n```\n"


REGISTER_TILE_CARD = {
    "id": "cpu-register-tile",
    "description": "Keep a small block of C (rows x 128-bit vectors) in registers for the whole k loop of a "
                   "GEMM, so C is loaded and stored once instead of once per k step.",
    "intent": "Accumulate a 4 x 16 tile of C in sixteen 128-bit registers across the k loop.",
    "preconditions": [
        {"what": "Rows of C are already updated with 128-bit vectors (vector-global-128).",
         "why": "The tile is made of vector registers; without vector loads of B the tile cannot be fed."},
        {"what": "The tile's loops have compile-time trip counts and are unrolled.",
         "why": "A run-time index into the accumulator array forces it into memory, which undoes the tile."}],
    "expected_effect": "C traffic falls from one load and store per k step to one store per tile; the loop "
                       "becomes bound by multiply-adds instead of loads and stores.",
    "risks": ["Edge rows and columns need a separate path.",
              "Too large a tile spills registers."],
    "cases": ["GEMM"],
    "requires": ["vector-global-128"],
    "conflicts": [],
    "triggers": {"findings": [], "classes": ["compute-bound"]},
    "recipe": ["Declare a kTileRows x kTileVecs array of 128-bit accumulators.",
               "For each k, load kTileVecs vectors of the row of B and broadcast one scalar of A per row.",
               "Multiply-add into the accumulators; store the tile once after the k loop.",
               "Run the edge rows and columns through the row-by-row path."],
}

VECTOR_CARD = {
    "id": "cpu-vector-rows",
    "description": "Update rows of C with 128-bit vector loads and stores of B and C instead of scalars.",
    "intent": "Load and store rows of B and C as 128-bit vectors in the rank-1 update loop.",
    "preconditions": [
        {"what": "The inner loop runs along a contiguous row of B and C.",
         "why": "128-bit loads need four consecutive floats; a strided loop cannot use them."}],
    "expected_effect": "Four multiply-adds per instruction in the inner loop.",
    "risks": ["The row length may not be a multiple of four: keep a scalar tail."],
    "cases": ["GEMM", "rank-1 updates"],
    "requires": [],
    "conflicts": [],
    "triggers": {"findings": [], "classes": ["compute-bound", "memory-bound"]},
    "recipe": ["Add a 128-bit vector type and unaligned Load4/Store4 helpers.",
               "Walk the row in steps of four with vector multiply-adds, then finish with scalars."],
}


def propose(feature, mechanism, locus, before, after, card):
    return {"naive": False, "mechanism": mechanism, "feature": feature, "locus": locus,
            "before_features": before, "after_features": after, "reference_features": [], "card": card}


STEP1 = propose("register-tile", "the 4 x 16 register tile of C (Tile)", "Tile() and the tiled loops in kpilot_launch",
                ["register-tile", "vector-global-128"], ["vector-global-128"], REGISTER_TILE_CARD)
STEP2 = propose("vector-global-128", "128-bit vector loads and stores along rows", "Row(), the inner j loop",
                ["vector-global-128"], [], VECTOR_CARD)
TWO = dict(STEP1, after_features=[])

GOOD_CITE_1 = {"removes": ["register-tile"], "citations": [
    cite("before", EXPERT, "  v4sf acc[kTileRows][kTileVecs] = {};"),
    cite("before", EXPERT, "    for (int64_t j0 = 0; j0 < tiled_n; j0 += kTileCols) Tile(a, b, c, k, n, i0, j0);"),
    cite("after", "step1.cpp", "  for (int64_t i = 0; i < m; ++i) Row(a, b, c, k, n, i, 0);")],
    "explanation": "The register tile and its loops are gone; every row goes through Row."}
BAD_CITE_1 = {"removes": ["register-tile"], "citations": [
    dict(cite("before", EXPERT, "  v4sf acc[kTileRows][kTileVecs] = {};"), text="  float acc[4][16] = {};")],
    "explanation": "The accumulator tile is gone."}
GOOD_CITE_2 = {"removes": ["vector-global-128"], "citations": [
    cite("before", "step1.cpp", "typedef float v4sf __attribute__((vector_size(16)));"),
    cite("before", "step1.cpp", "    for (; j + 4 <= n; j += 4) Store4(c_row + j, Load4(c_row + j) + av * Load4(b_row + j));"),
    cite("after", "step2.cpp", "    for (int64_t j = j0; j < n; ++j) c_row[j] += av * b_row[j];")],
    "explanation": "The vector type and the vector loop are gone; the row update is scalar."}

replies = [
    {"note": "1 propose: nothing removed (only a comment differs)", "text": "Summary: remove the register tile\n" + block(STEP1),
     "code_file": "expert_recommented.cpp"},
    {"note": "2 propose: two mechanisms removed at once", "text": "Summary: remove tile and vectors\n" + block(TWO),
     "code_file": "step2.cpp"},
    {"note": "3 propose: incorrect (skips the last k term)", "text": "Summary: remove the register tile\n" + block(STEP1),
     "code_file": "step1_incorrect.cpp"},
    {"note": "4 propose: good step 1", "text": "Summary: remove the register tile\n" + block(STEP1), "code_file": "step1.cpp"},
    {"note": "5 cite: a quote that does not match the line", "text": block(BAD_CITE_1)},
    {"note": "6 propose: good step 1", "text": "Summary: remove the register tile\n" + block(STEP1), "code_file": "step1.cpp"},
    {"note": "7 cite: good", "text": block(GOOD_CITE_1)},
    {"note": "8 rebuild: far slower (the naive reference)", "text": "Summary: rebuilt\n", "code_file": REFERENCE},
    {"note": "9 propose: good step 1", "text": "Summary: remove the register tile\n" + block(STEP1), "code_file": "step1.cpp"},
    {"note": "10 cite: good", "text": block(GOOD_CITE_1)},
    {"note": "11 rebuild: the expert again", "text": "Summary: rebuilt the register tile\n", "code_file": EXPERT},
    {"note": "12 propose: good step 2", "text": "Summary: remove the vectors\n" + block(STEP2), "code_file": "step2.cpp"},
    {"note": "13 cite: good", "text": block(GOOD_CITE_2)},
    {"note": "14 rebuild: step 1 again", "text": "Summary: rebuilt the vectors\n", "code_file": "step1.cpp"},
]
with open(os.path.join(HERE, "script.json"), "w") as f:
    json.dump({"replies": replies}, f, indent=1)
    f.write("\n")

# Admission on the held-out task examples/host/row_softmax (--admit-on), one reply per mined card
# in naive -> expert order: the first is faster than the held-out start (its reference) and is
# admitted; the second is correct but slower and is rejected.
admit = [
    {"note": "15 admit cpu-vector-rows: rows as SIMD loops with an inline exp, one thread (faster)",
     "text": "Summary: each row's passes as vector loops\n", "code_file": HELD_OUT_FAST},
    {"note": "16 admit cpu-register-tile: correct, three times the work (slower)",
     "text": "Summary: a register tile of rows\n", "code_file": "admit_row_softmax_slower.cpp"},
]
with open(os.path.join(HERE, "admit_script.json"), "w") as f:
    json.dump({"replies": admit}, f, indent=1)
    f.write("\n")
