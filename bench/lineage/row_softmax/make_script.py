#!/usr/bin/env python3
"""Writes script.json: the scripted generator replies of the H200 lineage check
(bench/lineage_h200_check.sh) for examples/cuda/row_softmax/candidates/lineage_expert.cu, in the
order `kpilot lineage` asks for them: for each of the four steps a simplification, its
confirmation with cited lines, and the rebuild (the pre-removal kernel itself). The citations'
line numbers are looked up in the kernel files, so the script stays right when they change.

    python3 bench/lineage/row_softmax/make_script.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
EXPERT = "../../../examples/cuda/row_softmax/candidates/lineage_expert.cu"
REFERENCE = "../../../examples/cuda/row_softmax/reference.cu"
S1, S2, S3 = "step1_scalar.cu", "step2_three_pass.cu", "step3_serial_combine.cu"


def cite(side, f, text):
    lines = open(os.path.join(HERE, f)).read().split("\n")
    hits = [i + 1 for i, l in enumerate(lines) if l == text]
    assert len(hits) == 1, (f, text, hits)
    return {"side": side, "line": hits[0], "text": text.strip()}


def fenced(obj):
    return "```json\n" + json.dumps(obj, indent=2) + "\n```\n"


def card(id, description, intent, preconditions, effect, risks, requires, findings, classes, recipe):
    return {"id": id, "description": description, "intent": intent,
            "preconditions": [{"what": w, "why": y} for w, y in preconditions], "expected_effect": effect,
            "risks": risks, "cases": ["row softmax", "row-wise reductions"], "requires": requires, "conflicts": [],
            "triggers": {"findings": findings, "classes": classes}, "recipe": recipe}


STEPS = [
    # (feature, mechanism, locus, before, after, card, before file, after file, before lines, after lines)
    ("vector-global-128", "128-bit float4 loads and stores along the row",
     "SoftmaxRows: the vec4 branches of both passes; kpilot_launch: the alignment test",
     ["block-reduce", "coalesced-global", "online-softmax", "vector-global-128"],
     ["block-reduce", "coalesced-global", "online-softmax"],
     card("row-softmax-float4", "Read and write the rows of a row-wise kernel as float4 when the row length is a "
          "multiple of 4 and the pointers are 16-byte aligned, with a scalar path otherwise.",
          "Load and store rows through float4 when cols % 4 == 0 and both pointers are 16-byte aligned.",
          [("Threads already walk the row with a stride (coalesced-global).",
            "Each thread's float4 must be the next 16 bytes of a warp-wide contiguous span, or the loads stay uncoalesced."),
           ("cols % 4 == 0 and x, y 16-byte aligned, tested on the host.",
            "A misaligned float4 access faults (cudaErrorMisalignedAddress).")],
          "A quarter of the load and store instructions for the same bytes; closer to DRAM bandwidth on long rows.",
          ["Rows whose length is not a multiple of 4 need the scalar path."],
          ["coalesced-global"], ["scalar-global-loads", "dram-near-peak"], ["memory-bound"],
          ["Add a vec4 flag computed on the host from cols % 4 and the pointers' alignment.",
           "In each pass, walk c = threadIdx.x * 4 with stride BLOCK * 4 through float4 loads (and stores in the last pass).",
           "Keep the scalar loops for vec4 == false."]),
     EXPERT, S1,
     ["      const float4 q = *reinterpret_cast<const float4*>(xr + c);",
      "      *reinterpret_cast<float4*>(yr + c) = q;"],
     ["  for (int64_t c = threadIdx.x; c < cols; c += BLOCK) acc = Push(acc, xr[c]);"]),
    ("online-softmax", "the online (max, sum) recurrence that reads the row once for both statistics",
     "Push/Merge/BlockMerge and the first pass of SoftmaxRows",
     ["block-reduce", "coalesced-global", "online-softmax"], ["block-reduce", "coalesced-global"],
     card("online-softmax-block", "Compute a row's max and sum of exp(x - max) in one pass with the (m, d) online "
          "recurrence, merging per-thread pairs in the block reduction.",
          "Fuse the max pass and the sum pass into one online (max, sum) pass with rescaling.",
          [("The block already reduces per-thread partials (block-reduce).",
            "The (max, sum) pairs must be merged with the rescaling Merge; a plain sum or max reduction cannot combine them."),
           ("Inputs are finite.",
            "With an infinite x the rescaling factor exp(max_old - max_new) becomes NaN.")],
          "One read of the row for the statistics instead of two: about a third less DRAM traffic for softmax.",
          ["More exp evaluations per element (the rescaling); check that the kernel stays memory-bound."],
          ["block-reduce", "coalesced-global"], ["dram-near-peak"], ["memory-bound"],
          ["Replace the per-thread max and sum by a MaxSum pair updated with Push (rescale when the max grows).",
           "Merge pairs with Merge in the warp shuffles and across warps.",
           "Drop the separate max pass."]),
     S1, S2,
     ["  if (v > acc.max) return {v, acc.sum * expf(acc.max - v) + 1.0f};",
      "  const MaxSum total = BlockMerge(acc);"],
     ["  max = BlockReduce(max, MaxOp(), -INFINITY);",
      "  sum = BlockReduce(sum, SumOp(), 0.0f);"]),
    ("block-reduce", "the two-level block reduction (warp shuffles, then warp partials in shared memory)",
     "WarpReduce/BlockReduce and their two calls in SoftmaxRows",
     ["block-reduce", "coalesced-global"], ["coalesced-global"],
     card("two-level-block-reduce", "Reduce a block's values with warp shuffles and one shared-memory slot per warp "
          "instead of a serial loop over every thread's partial.",
          "Reduce per-thread partials with warp shuffles, then the warps' partials in warp 0.",
          [("Every thread of the block holds a partial (threads strided along the row).",
            "The reduction combines one value per thread; without that mapping there is nothing to reduce."),
           ("The block size is a multiple of 32.",
            "A partial warp would shuffle with lanes that do not exist (undefined values).")],
          "log2(32) shuffle steps per warp and one small shared exchange instead of BLOCK serial steps on one thread.",
          ["Each reduction needs its own shared slots (or a barrier before reuse)."],
          ["coalesced-global"], ["barrier-stall", "dominant-warp-stall"], ["latency-bound", "memory-bound"],
          ["Add WarpReduce: for offsets 16, 8, 4, 2, 1 combine with __shfl_xor_sync.",
           "Write lane 0's result to partial[warp]; after a barrier warp 0 reduces the partials.",
           "Replace the serial combine by this BlockReduce."]),
     S2, S3,
     ["  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));"],
     ["    for (int t = 1; t < BLOCK; ++t) r = op(r, partial[t]);"]),
    ("coalesced-global", "one block per row with threads strided along it (coalesced), instead of one thread per row",
     "SoftmaxRows' row and column mapping, BlockCombine, and the launch configuration",
     ["coalesced-global"], [],
     card("row-per-block-coalesced", "Give each row to a block whose threads walk it with a stride of the block size, "
          "so a warp reads 32 consecutive floats, instead of one thread per row.",
          "Map a block to each row and threadIdx.x to consecutive columns, combining the threads' partials.",
          [("Rows are contiguous in memory (row-major).",
            "Consecutive threads must touch consecutive addresses; a column-major layout needs the transposed mapping."),
           ("Rows are long enough to give every thread work (cols well above the block size).",
            "Short rows leave most threads idle; map several rows per block instead.")],
          "Coalesced 128-byte transactions instead of one strided access per thread per row.",
          ["The per-row statistics now need a combination across the block's threads.",
           "Grid size equals the number of rows (at most INT_MAX)."],
          [], ["uncoalesced-global-access", "low-cache-hit-rate"], ["memory-bound"],
          ["Launch one block of BLOCK threads per row.",
           "Walk the row with c = threadIdx.x, c += BLOCK in each pass.",
           "Combine the threads' max and sum through shared memory before the next pass."]),
     S3, REFERENCE,
     ["  for (int64_t c = threadIdx.x; c < cols; c += BLOCK) max = fmaxf(max, xr[c]);",
      "  SoftmaxRows<<<static_cast<unsigned>(rows), BLOCK, 0, static_cast<cudaStream_t>(stream)>>>(x, y, cols);"],
     ["  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;"]),
]

replies = []
for i, (feature, mechanism, locus, before, after, c, bf, af, bl, al) in enumerate(STEPS, 1):
    decl = {"naive": False, "mechanism": mechanism, "feature": feature, "locus": locus, "before_features": before,
            "after_features": after, "reference_features": [], "card": c}
    replies.append({"note": f"step {i}: propose (remove {feature})", "text": f"Summary: remove {mechanism}\n" + fenced(decl),
                    "code_file": af})
    cites = [cite("before", bf, t) for t in bl] + [cite("after", af, t) for t in al]
    replies.append({"note": f"step {i}: confirm with citations",
                    "text": fenced({"removes": [feature], "citations": cites, "explanation": f"The change removes {mechanism}."})})
    replies.append({"note": f"step {i}: rebuild (the pre-removal kernel)", "text": f"Summary: add back {mechanism}\n",
                    "code_file": bf})
with open(os.path.join(HERE, "script.json"), "w") as f:
    json.dump({"replies": replies}, f, indent=1)
    f.write("\n")
