// The report page (report.h): a fixed shell, the model as JSON inside a script element, and the
// styles and script (assets/report.css, assets/report.js, compiled in by embed_asset.cmake).
#include <fmt/format.h>

#include "report/assets.h"
#include "report/report.h"

namespace kpilot::report {
namespace {

std::string EscapeHtml(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// JSON that cannot end the script element it sits in: every '<' (only ever inside a string) as
// \u003c, so neither "</script>" nor "<!--" can appear in the text.
std::string ScriptSafeJson(const nlohmann::json& model) {
  const std::string text = model.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 64);
  for (char c : text) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string RenderHtml(const nlohmann::json& model) {
  const nlohmann::json& run = model.value("run", nlohmann::json::object());
  const std::string title = fmt::format("kpilot report: {} {} ({})", model.value("kind", "run"),
                                        run.value("id", int64_t{0}), run.value("task", ""));
  std::string page;
  page.reserve(64 * 1024);
  page += "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"generator\" content=\"kpilot report\">\n";
  page += "<title>" + EscapeHtml(title) + "</title>\n<style>\n";
  page += kReportCss;
  page += "</style>\n</head>\n<body>\n";
  page += "<header id=\"report-header\"></header>\n<nav id=\"report-nav\"></nav>\n";
  page += "<div id=\"report-errors\"></div>\n<main id=\"report-main\"></main>\n";
  page +=
      "<noscript><p>This report draws its views with JavaScript; the data is in the "
      "report-model script element of this file.</p></noscript>\n";
  page += "<script type=\"application/json\" id=\"report-model\">";
  page += ScriptSafeJson(model);
  page += "</script>\n<script>\n";
  page += kReportJs;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace kpilot::report
