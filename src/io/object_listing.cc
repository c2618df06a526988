#include "io/object_listing.h"

#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include <algorithm>
#include <ctime>
#include <map>

#include "io/gcs.h"
#include "io/http_source.h"
#include "io/s3.h"
#include "util/settings.h"

namespace tilewise::io {

namespace {

constexpr size_t kMaxObjects = 100000;

// The query string of a listing page, its parameters sorted by name as Signature Version 4 requires.
std::string listing_query(const std::string& prefix, const std::string& marker) {
  std::map<std::string, std::string> params = {{"delimiter", "/"}, {"prefix", prefix}};
  if (!marker.empty()) params["marker"] = marker;
  if (internal::settings().list_page_keys > 0) params["max-keys"] = std::to_string(internal::settings().list_page_keys);
  std::string q;
  for (const auto& [name, value] : params) q += (q.empty() ? "" : "&") + name + "=" + encode_url_component(value);
  return q;
}

// One page's keys (folders, which end in '/', left out) and the marker of the next page (empty: the last).
Status parse_page(const std::string& xml, const std::string& name, std::vector<std::string>& keys,
                  std::string& next_marker) {
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size())) return io_error(name + ": the object listing is not XML");
  const pugi::xml_node root = doc.child("ListBucketResult");
  if (!root) return io_error(name + ": the answer is not an object listing (no ListBucketResult)");
  std::string last;
  for (pugi::xml_node c = root.child("Contents"); c; c = c.next_sibling("Contents")) {
    last = c.child_value("Key");
    if (!last.empty() && last.back() != '/') keys.push_back(last);
  }
  next_marker.clear();
  if (std::string(root.child_value("IsTruncated")) == "true") {
    next_marker = root.child_value("NextMarker");
    if (next_marker.empty()) next_marker = last;  // S3 names the next marker only for some requests
    if (next_marker.empty()) return io_error(name + ": a truncated object listing without a next marker");
  }
  return Status();
}

// The files an HTTP folder index names: nginx's JSON autoindex (an array of {"name", "type"}), else every
// relative link of an HTML page that names a file of the folder itself (no '/', '?', '#' or scheme in it).
std::vector<std::string> index_entries(const std::string& body) {
  std::vector<std::string> out;
  const size_t at = body.find_first_not_of(" \t\r\n");
  if (at != std::string::npos && body[at] == '[') {
    const nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    for (const nlohmann::json& e : doc.is_array() ? doc : nlohmann::json::array()) {
      if (e.is_object() && e.value("type", "") == "file" && e.contains("name") && e["name"].is_string()) {
        out.push_back(encode_url_path(e["name"].get<std::string>()));
      }
    }
    return out;
  }
  for (size_t h = body.find("href=\""); h != std::string::npos; h = body.find("href=\"", h + 6)) {
    const size_t end = body.find('"', h + 6);
    if (end == std::string::npos) break;
    const std::string link = body.substr(h + 6, end - h - 6);
    if (!link.empty() && link.find_first_of("/?#:") == std::string::npos && link != "." && link != "..") out.push_back(link);
  }
  return out;
}

// An HTTP(S) folder's files, from its index.
Result<std::vector<std::string>> list_http_folder(const std::string& url) {
  const std::string folder = url.substr(0, url.rfind('/') + 1);
  const std::string name = redact_url(folder);
  TW_ASSIGN_OR_RETURN(HttpAnswer index, http_fetch(folder, name, auth_headers({}), 16u << 20));
  std::vector<std::string> out;
  for (const std::string& entry : index_entries(index.body)) out.push_back(folder + entry);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.size() > kMaxObjects) return io_error(name + ": over " + std::to_string(kMaxObjects) + " objects");
  return out;
}

}  // namespace

bool is_listable_url(const std::string& url) { return is_s3_url(url) || is_gcs_url(url) || is_http_url(url); }

Result<std::vector<std::string>> list_objects_beside(const std::string& url) {
  if (is_http_url(url)) return list_http_folder(url);
  if (!is_listable_url(url)) return invalid_argument(redact_url(url) + ": not an s3://, gs:// or http(s):// URL");
  const std::string scheme = url.substr(0, url.find("://") + 3);
  const std::string rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  const std::string bucket = rest.substr(0, slash);
  if (bucket.empty()) return invalid_argument(redact_url(url) + ": no bucket");
  const std::string key = slash == std::string::npos ? "" : rest.substr(slash + 1);
  const std::string prefix = key.substr(0, key.rfind('/') == std::string::npos ? 0 : key.rfind('/') + 1);
  const std::string name = scheme + bucket + "/" + prefix;
  std::vector<std::string> keys;
  std::string marker;
  do {
    const std::string query = listing_query(prefix, marker);
    Result<std::string> page = [&]() -> Result<std::string> {
      if (is_gcs_url(url)) return http_get(gcs_endpoint() + "/" + encode_url_path(bucket) + "?" + query, name, gcs_signer());
      TW_ASSIGN_OR_RETURN(S3Object o, resolve_s3_object(bucket, ""));
      o.url += "?" + query;
      o.canonical_query = query;
      return http_get(o.url, name, [&o](const std::string&) { return sign_s3_get(o, "", std::time(nullptr)); });
    }();
    if (!page.ok()) return page.status();
    TW_RETURN_IF_ERROR(parse_page(*page, name, keys, marker));
    if (keys.size() > kMaxObjects) return io_error(name + ": over " + std::to_string(kMaxObjects) + " objects");
  } while (!marker.empty());
  std::sort(keys.begin(), keys.end());
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const std::string& k : keys) {
    if (k.rfind(prefix, 0) == 0 && k.find('/', prefix.size()) == std::string::npos) out.push_back(scheme + bucket + "/" + k);
  }
  return out;
}

}  // namespace tilewise::io
