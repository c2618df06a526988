#include "write/stow_rs.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "io/http_source.h"

namespace tilewise::write {

namespace {

std::string boundary() {
  std::random_device seed;
  std::mt19937_64 rng(seed());
  static const char kHex[] = "0123456789abcdef";
  std::string b = "tilewise-";
  for (int i = 0; i < 24; ++i) b += kHex[rng() % 16];
  return b;
}

}  // namespace

Status stow_rs(const std::string& folder, const std::string& base_url, const std::vector<std::string>& headers) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".dcm") files.push_back(entry.path().string());
  }
  if (ec) return io_error(folder + ": cannot list (" + ec.message() + ")");
  if (files.empty()) return invalid_argument(folder + ": no DICOM instances (*.dcm) to send");
  std::sort(files.begin(), files.end());
  std::string url = base_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += "/studies";
  const std::string name = io::redact_url(url);
  for (const std::string& file : files) {
    const std::string b = boundary();
    std::vector<std::string> request = headers;
    request.push_back("Content-Type: multipart/related; type=\"application/dicom\"; boundary=" + b);
    request.push_back("Accept: application/dicom+json");
    const std::vector<io::PostPart> body{{"--" + b + "\r\nContent-Type: application/dicom\r\n\r\n", ""},
                                         {"", file},
                                         {"\r\n--" + b + "--\r\n", ""}};
    TW_ASSIGN_OR_RETURN(const io::PostAnswer answer, io::http_post(url, name, request, body));
    if (answer.status == 200) continue;
    const std::string what = answer.status == 401 || answer.status == 403 ? "access denied"
                             : answer.status == 202                       ? "stored with warnings or failures"
                             : answer.status == 409                       ? "refused"
                                                                          : "failed";
    return io_error(name + ": STOW-RS of " + std::filesystem::path(file).filename().string() + " " + what + " (HTTP " +
                    std::to_string(answer.status) + ")" + (answer.body.empty() ? "" : ": " + answer.body.substr(0, 300)));
  }
  return Status();
}

}  // namespace tilewise::write
