// The page's styles and script, compiled in from assets/ (embed_asset.cmake writes assets.cc).
#pragma once

namespace kpilot::report {

extern const char kReportCss[];
extern const char kReportJs[];

}  // namespace kpilot::report
