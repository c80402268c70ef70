#include "exec/dashboard_login.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace isolane {

namespace {

std::string cookieValue(const std::string& token) {
  static constexpr std::string_view kLabel = "isolane dashboard";
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
       reinterpret_cast<const unsigned char*>(kLabel.data()), kLabel.size(), mac, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[mac[i] >> 4];
    hex += kHex[mac[i] & 15];
  }
  return hex;
}

}  // namespace

bool secretMatches(std::string_view given, std::string_view expected) {
  return given.size() == expected.size() &&
         CRYPTO_memcmp(given.data(), expected.data(), expected.size()) == 0;
}

std::string dashboardSetCookie(const std::string& token) {
  // Lax, not Strict: a login link opened from another site must still carry it on the redirect.
  return std::string(kDashboardCookie) + "=" + cookieValue(token) +
         "; Path=/dashboard; HttpOnly; SameSite=Lax";
}

bool cookiesOpenDashboard(const std::vector<std::string_view>& cookieHeaders,
                          const std::string& token) {
  std::string expected = cookieValue(token);
  for (std::string_view cookies : cookieHeaders) {
    while (!cookies.empty()) {
      std::size_t end = cookies.find(';');
      std::string_view pair = cookies.substr(0, end);
      while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
      if (pair.size() > kDashboardCookie.size() && pair.starts_with(kDashboardCookie) &&
          pair[kDashboardCookie.size()] == '=' &&
          secretMatches(pair.substr(kDashboardCookie.size() + 1), expected)) {
        return true;
      }
      if (end == std::string_view::npos) break;
      cookies.remove_prefix(end + 1);
    }
  }
  return false;
}

std::optional<std::string_view> queryParameter(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    std::string_view pair = query.substr(0, query.find('&'));
    if (pair.size() > name.size() && pair.starts_with(name) && pair[name.size()] == '=') {
      return pair.substr(name.size() + 1);
    }
    if (pair.size() == query.size()) break;
    query.remove_prefix(pair.size() + 1);
  }
  return std::nullopt;
}

}  // namespace isolane
