#pragma once
// The executor's dashboard login. A browser cannot send `Authorization: Bearer` to /dashboard
// (nor can EventSource), so /dashboard?token=T checks the token once and sets a cookie that only
// /dashboard paths get. The cookie holds an HMAC of a fixed label under the token, not the token:
// it opens the dashboard and runs no code.
//
// Thread rule: pure functions, safe from any thread.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace isolane {

inline constexpr std::string_view kDashboardCookie = "isolane_dashboard";

// Compares in time that does not depend on where the strings differ.
bool secretMatches(std::string_view given, std::string_view expected);
// The Set-Cookie value the login answers with.
std::string dashboardSetCookie(const std::string& token);
// Whether one of the request's Cookie header values carries the dashboard's cookie for `token`.
bool cookiesOpenDashboard(const std::vector<std::string_view>& cookieHeaders,
                          const std::string& token);
// The value of `name` in a query string, as it is (tokens need no percent-decoding).
std::optional<std::string_view> queryParameter(std::string_view query, std::string_view name);

}  // namespace isolane
