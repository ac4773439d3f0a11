// A stand-in source tree for search_code/read_file in tests.
struct PipelineState {
  int stage;  // the shared-memory stage a warp reads next
};
