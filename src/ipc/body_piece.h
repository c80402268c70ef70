#pragma once
// BodyPiece: one piece of a streamed body on its way to a client. Either it owns its bytes, or it
// is a block of memory a worker process shares with the master (ipc/stream_blocks.h), lent to the
// piece: the block goes back to the worker when the piece is destroyed, so whoever writes the
// piece keeps it until the write is done, and the bytes are never copied in the master.
//
// Thread rule: a piece is a value (move-only); destroying it may happen on any thread.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace isolane {

// Who gets a lent block back.
class BlockLender {
 public:
  virtual ~BlockLender() = default;
  virtual void giveBack(std::uint32_t block) = 0;
};

class BodyPiece {
 public:
  BodyPiece() = default;
  BodyPiece(std::string bytes) : owned_(std::move(bytes)) {}  // NOLINT: a string is a piece
  BodyPiece(const char* bytes) : owned_(bytes) {}            // NOLINT
  // `bytes` lie in `block` of `lender`'s memory, which outlives the piece through `lender`.
  BodyPiece(std::shared_ptr<BlockLender> lender, std::uint32_t block, std::string_view bytes)
      : lender_(std::move(lender)), block_(block), lent_(bytes) {}
  BodyPiece(BodyPiece&& other) noexcept { *this = std::move(other); }
  BodyPiece& operator=(BodyPiece&& other) noexcept {
    if (this == &other) return *this;
    giveBack();
    owned_ = std::move(other.owned_);
    lender_ = std::move(other.lender_);
    block_ = other.block_;
    lent_ = other.lent_;
    other.lent_ = {};
    return *this;
  }
  BodyPiece(const BodyPiece&) = delete;
  BodyPiece& operator=(const BodyPiece&) = delete;
  ~BodyPiece() { giveBack(); }

  std::string_view bytes() const { return lender_ ? lent_ : std::string_view(owned_); }
  std::size_t size() const { return bytes().size(); }
  bool empty() const { return size() == 0; }
  bool lent() const { return lender_ != nullptr; }
  // The bytes as a string of their own (a copy when they were lent; the block goes back).
  std::string take() && {
    if (!lender_) return std::move(owned_);
    std::string copy(lent_);
    giveBack();
    return copy;
  }

 private:
  void giveBack() {
    if (!lender_) return;
    lender_->giveBack(block_);
    lender_.reset();
    lent_ = {};
  }

  std::string owned_;
  std::shared_ptr<BlockLender> lender_;
  std::uint32_t block_ = 0;
  std::string_view lent_;
};

}  // namespace isolane
