// Objects beside an object in a bucket: the "folder" of a slide stored as several objects (a DICOM series of
// one object per instance, as the Imaging Data Commons keeps them). S3 and GCS list a prefix through the same
// XML answer (ListBucketResult), one page of up to 1,000 keys per request. A plain HTTP(S) folder is listed
// where its server offers an index of it: a GET of the folder's URL answering an HTML page of links (nginx's
// and Apache's autoindex, Python's http.server) or nginx's JSON autoindex; servers that offer none answer
// 403 or 404, which leaves the caller's file alone.
#pragma once

#include <string>
#include <vector>

#include "tilewise/status.h"

namespace tilewise::io {

// Whether the URL's store may list its objects (s3://, gs://, and http(s):// where the server offers an index).
bool is_listable_url(const std::string& url);

// The objects whose keys start with the URL's key up to its last '/' and hold no further '/', as URLs of the
// URL's scheme, sorted by key; the URL may name such a folder itself (ending in '/'). Errors are the store's
// (NotFound for a missing bucket, IoError for access denied), with the folder's URL; listings over 100,000
// objects are refused.
Result<std::vector<std::string>> list_objects_beside(const std::string& url);

}  // namespace tilewise::io
