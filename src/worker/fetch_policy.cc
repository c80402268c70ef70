#include "worker/fetch_policy.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace isolane {
namespace {

struct Range4 {
  std::uint32_t base;
  int bits;
  const char* name;
};

// RFC 6890 special-purpose and friends: everything an app must not reach by default.
const Range4 kReserved4[] = {
    {0x00000000, 8, "unspecified (0.0.0.0/8)"},
    {0x0A000000, 8, "private (10.0.0.0/8)"},
    {0x64400000, 10, "carrier-grade NAT (100.64.0.0/10)"},
    {0x7F000000, 8, "loopback (127.0.0.0/8)"},
    {0xA9FE0000, 16, "link-local and cloud metadata (169.254.0.0/16)"},
    {0xAC100000, 12, "private (172.16.0.0/12)"},
    {0xC0000000, 24, "IETF protocol assignments (192.0.0.0/24)"},
    {0xC0000200, 24, "documentation (192.0.2.0/24)"},
    {0xC0586300, 24, "6to4 relay anycast (192.88.99.0/24, deprecated)"},
    {0xC0A80000, 16, "private (192.168.0.0/16)"},
    {0xC6120000, 15, "benchmarking (198.18.0.0/15)"},
    {0xC6336400, 24, "documentation (198.51.100.0/24)"},
    {0xCB007100, 24, "documentation (203.0.113.0/24)"},
    {0xE0000000, 4, "multicast (224.0.0.0/4)"},
    {0xF0000000, 4, "reserved (240.0.0.0/4)"},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

namespace {

std::optional<std::string> reservedRange4(std::uint32_t ip) {
  for (const Range4& r : kReserved4) {
    std::uint32_t mask = r.bits == 0 ? 0 : ~std::uint32_t{0} << (32 - r.bits);
    if ((ip & mask) == r.base) return std::string(r.name);
  }
  return std::nullopt;
}

std::uint32_t v4At(const boost::asio::ip::address_v6::bytes_type& b, std::size_t at) {
  return std::uint32_t{b[at]} << 24 | std::uint32_t{b[at + 1]} << 16 |
         std::uint32_t{b[at + 2]} << 8 | std::uint32_t{b[at + 3]};
}

bool startsWith(const boost::asio::ip::address_v6::bytes_type& b,
                std::initializer_list<std::uint8_t> prefix) {
  std::size_t i = 0;
  for (std::uint8_t byte : prefix) {
    if (b[i++] != byte) return false;
  }
  return true;
}

// IPv6: only global unicast (2000::/3) is public, less the special-purpose blocks inside it
// (RFC 6890's registry). Forms that embed an IPv4 address a gateway would forward to (NAT64,
// 6to4) are public only when the address they embed is: "[64:ff9b::127.0.0.1]" is loopback.
std::optional<std::string> reservedRange6(const boost::asio::ip::address_v6& v6) {
  auto b = v6.to_bytes();
  auto embedding = [&](const char* form, std::size_t at) -> std::optional<std::string> {
    if (auto inner = reservedRange4(v4At(b, at))) return std::string(form) + " of " + *inner;
    return std::nullopt;
  };
  if (v6.is_v4_mapped()) return reservedRange4(v4At(b, 12));  // ::ffff:a.b.c.d is a.b.c.d
  if (v6.is_loopback()) return "loopback (::1)";
  if (v6.is_unspecified()) return "unspecified (::)";
  bool zero64 = startsWith(b, {0, 0, 0, 0, 0, 0, 0, 0});
  if (zero64 && b[8] == 0 && b[9] == 0 && b[10] == 0 && b[11] == 0) {
    return "IPv4-compatible (::/96, deprecated)";  // ::127.0.0.1 reaches 127.0.0.1 on some stacks
  }
  if (zero64 && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0) {
    return "IPv4-translated (::ffff:0:0:0/96)";
  }
  if (startsWith(b, {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0})) {
    return embedding("NAT64 (64:ff9b::/96)", 12);
  }
  if (startsWith(b, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01})) return "local NAT64 (64:ff9b:1::/48)";
  if ((b[0] & 0xE0) != 0x20) {  // outside 2000::/3: nothing here is globally routed
    if (v6.is_link_local()) return "link-local (fe80::/10)";
    if (v6.is_site_local()) return "site-local (fec0::/10, deprecated)";
    if (v6.is_multicast()) return "multicast (ff00::/8)";
    if ((b[0] & 0xFE) == 0xFC) return "unique local (fc00::/7)";
    if (startsWith(b, {0x01, 0x00, 0, 0, 0, 0, 0, 0})) return "discard-only (100::/64)";
    return "reserved (outside global unicast 2000::/3)";
  }
  if (startsWith(b, {0x20, 0x02})) return embedding("6to4 (2002::/16)", 2);
  if (startsWith(b, {0x20, 0x01, 0x0d, 0xb8})) return "documentation (2001:db8::/32)";
  if (b[0] == 0x3f && b[1] == 0xff && (b[2] & 0xF0) == 0) return "documentation (3fff::/20)";
  // Teredo (2001::/32, whose address hides an IPv4 one), benchmarking, ORCHID and the rest.
  if (b[0] == 0x20 && b[1] == 0x01 && (b[2] & 0xFE) == 0) {
    return "IETF protocol assignments (2001::/23)";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> FetchPolicy::reservedRange(const boost::asio::ip::address& address) {
  if (address.is_v6()) return reservedRange6(address.to_v6());
  return reservedRange4(address.to_v4().to_uint());
}

bool FetchPolicy::allowed(const std::string& host, std::uint16_t port,
                          const std::string& address) const {
  std::string h = lower(host);
  std::string p = std::to_string(port);
  for (const std::string& entry : allow_) {
    std::string e = lower(entry);
    if (e == "*" || e == h || e == address || e == h + ":" + p || e == address + ":" + p ||
        e == "[" + address + "]:" + p) {
      return true;
    }
  }
  return false;
}

std::optional<std::string> FetchPolicy::refuse(const std::string& host, std::uint16_t port,
                                               const boost::asio::ip::address& address) const {
  auto range = reservedRange(address);
  if (!range) return std::nullopt;
  if (allowed(host, port, address.to_string())) return std::nullopt;
  // An allowed IPv4 address is allowed in its mapped form too (how a dual-stack resolver may
  // give it).
  if (address.is_v6() && address.to_v6().is_v4_mapped() &&
      allowed(host, port,
              boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6())
                  .to_string())) {
    return std::nullopt;
  }
  return host + " resolves to " + address.to_string() + ", a " + *range +
         " address; apps may reach only public addresses unless the app's fetch_allow lists it";
}

}  // namespace isolane
