// HTTP for the Hub client, through libcurl: one request at a time, redirects never followed here (the
// caller decides whether a token may go along), proxies from the environment (http_proxy, https_proxy,
// no_proxy) and TLS verified against the system's certificate authorities, as libcurl does by default,
// or against the bundle $REQUESTS_CA_BUNDLE, else $CURL_CA_BUNDLE, names (as huggingface_hub's requests
// reads them: a mirror with a certificate authority of its own).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace tb::hub {

// The connection failed or dropped (no complete HTTP response): worth retrying.
struct TransportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The server's TLS certificate was not accepted: retrying cannot help.
struct CertificateError : TransportError {
  using TransportError::TransportError;
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names in lower case; the last of a repeated header
  std::string body;                            // empty for a streamed GET
  std::string header(const std::string& lower_name) const;
};

class Http {
 public:
  Http();
  ~Http();
  Http(const Http&) = delete;
  Http& operator=(const Http&) = delete;

  // A request whose body (an API answer or an error) is kept whole, up to `max_body` bytes.
  HttpResponse request(const std::string& method, const std::string& url, const std::vector<std::string>& headers,
                       size_t max_body = size_t(64) << 20);
  // A GET whose body goes to `sink` when the status is 200 or 206 (other bodies are kept, for their
  // error message). `sink` returns false to abort (the transfer then ends with TransportError).
  HttpResponse get(const std::string& url, const std::vector<std::string>& headers,
                   const std::function<bool(const char* data, size_t size, long status)>& sink);

 private:
  void* curl_;  // CURL*: one handle, so connections are reused
};

// Percent-encodes all but A-Z a-z 0-9 - _ . ~ and the characters in `safe` (Python's urllib.parse.quote).
std::string url_quote(const std::string& text, const std::string& safe = "");
// "https://host:port" of an absolute URL ("" when `url` is not absolute).
std::string url_origin(const std::string& url);

}  // namespace tb::hub
