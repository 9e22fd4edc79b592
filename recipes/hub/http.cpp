#include "hub/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>

namespace tb::hub {

namespace {

struct Transfer {
  HttpResponse* response;
  const std::function<bool(const char*, size_t, long)>* sink;  // null: keep the body
  size_t max_body;
  bool aborted = false;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {  // a status line: a new response (after a 100 Continue)
    t->response->headers.clear();
    const auto space = line.find(' ');
    t->response->status = space == std::string::npos ? 0 : std::strtol(line.c_str() + space + 1, nullptr, 10);
    return size * count;
  }
  const auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon), value = line.substr(colon + 1);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    const auto first = value.find_first_not_of(" \t"), last = value.find_last_not_of(" \t\r\n");
    t->response->headers[name] = first == std::string::npos ? std::string() : value.substr(first, last - first + 1);
  }
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  const long code = t->response->status;
  if (t->sink && (code == 200 || code == 206)) {
    if (!(*t->sink)(data, n, code)) {
      t->aborted = true;
      return 0;  // libcurl ends the transfer with CURLE_WRITE_ERROR
    }
    return n;
  }
  if (t->response->body.size() + n > t->max_body) {
    t->aborted = true;
    return 0;
  }
  t->response->body.append(data, n);
  return n;
}

// libcurl's global state, once per process (curl_global_init is not thread-safe).
void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpResponse perform(void* handle, const std::string& method, const std::string& url,
                     const std::vector<std::string>& headers, const std::function<bool(const char*, size_t, long)>* sink,
                     size_t max_body) {
  HttpResponse response;
  Transfer transfer{&response, sink, max_body};
  CURL* curl = static_cast<CURL*>(handle);
  curl_easy_reset(curl);  // options back to defaults; the connection cache stays
  curl_slist* list = nullptr;
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM in a threaded program
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 30L);
  // A stalled connection (under 1 byte/s for 60 s) is a dropped one: retried, then resumed.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 512L * 1024);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "tunebench/" TUNEBENCH_VERSION);
  for (const char* name : {"REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"})
    if (const char* bundle = std::getenv(name); bundle && *bundle) {
      curl_easy_setopt(curl, CURLOPT_CAINFO, bundle);
      break;
    }
  char detail[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
  if (method == "HEAD") curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  else if (method != "GET") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  const CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(list);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);  // `detail` ends here
  if (code != CURLE_OK) {
    if (transfer.aborted && sink) throw TransportError("the transfer was stopped");
    const std::string why = (*detail ? std::string(detail) : std::string(curl_easy_strerror(code))) + " (" + url_origin(url) + ")";
    if (code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE || code == CURLE_SSL_ISSUER_ERROR)
      throw CertificateError(why);
    throw TransportError(why);
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

Http::Http() {
  global_init();
  curl_ = curl_easy_init();
  if (!curl_) throw std::runtime_error("libcurl could not start a session");
}

Http::~Http() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HttpResponse Http::request(const std::string& method, const std::string& url, const std::vector<std::string>& headers,
                           size_t max_body) {
  return perform(curl_, method, url, headers, nullptr, max_body);
}

HttpResponse Http::get(const std::string& url, const std::vector<std::string>& headers,
                       const std::function<bool(const char*, size_t, long)>& sink) {
  return perform(curl_, "GET", url, headers, &sink, size_t(1) << 20);
}

std::string url_quote(const std::string& text, const std::string& safe) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || safe.find(char(c)) != std::string::npos) {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string url_origin(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  return url.substr(0, url.find('/', scheme + 3));
}

}  // namespace tb::hub
