# cmake -DOUT=assets.cc -DCSS=report.css -DJS=report.js -P embed_asset.cmake: the report's assets as
# C++ raw string literals, so the page needs no file beside the kpilot binary.
file(READ "${CSS}" css)
file(READ "${JS}" js)
foreach(text IN ITEMS "${css}" "${js}")
  string(FIND "${text}" ")KPILOT_ASSET\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "an asset contains the raw-string delimiter )KPILOT_ASSET\"")
  endif()
endforeach()
file(WRITE "${OUT}.tmp"
  "// Generated from src/report/assets by embed_asset.cmake; do not edit.\n"
  "#include \"report/assets.h\"\n"
  "namespace kpilot::report {\n"
  "const char kReportCss[] = R\"KPILOT_ASSET(${css})KPILOT_ASSET\";\n"
  "const char kReportJs[] = R\"KPILOT_ASSET(${js})KPILOT_ASSET\";\n"
  "}  // namespace kpilot::report\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
