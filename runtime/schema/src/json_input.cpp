// Bounded JSON and CBOR parsers: nlohmann's SAX events build the tree, and
// the first array or object past the depth limit stops the parse. The JSON
// text parser is iterative; the CBOR reader recurses once per level, but
// only as long as the handler accepts each level's start, so its recursion
// ends at the limit too.
#include "shmbus/schema/json_input.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "shmbus/utf8.hpp"

namespace shmbus::schema {

namespace {

template <typename J>
class BoundedBuilder {
 public:
  using string_t = typename J::string_t;
  using binary_t = typename J::binary_t;

  BoundedBuilder(std::size_t max_depth, bool check_utf8) : max_depth_(max_depth), check_utf8_(check_utf8) {}

  bool null() { return put(J(nullptr)); }
  bool boolean(bool v) { return put(J(v)); }
  bool number_integer(typename J::number_integer_t v) { return put(J(v)); }
  bool number_unsigned(typename J::number_unsigned_t v) { return put(J(v)); }
  bool number_float(typename J::number_float_t v, const string_t& /*text*/) { return put(J(v)); }
  bool string(string_t& v) {
    if (!utf8_ok(v)) return false;
    return put(J(std::move(v)));
  }
  /// A CBOR byte string (rosbridge's uint8[]) becomes the array of its
  /// bytes, as the codec and JSON expect; it is one level deeper.
  bool binary(binary_t& v) {
    if (!open(J::array())) return false;
    J& bytes = *stack_.back();
    for (const std::uint8_t b : v) bytes.push_back(J(b));
    return close();
  }
  bool start_object(std::size_t /*elements: the input's claim, never reserved*/) { return open(J::object()); }
  bool key(string_t& k) {
    if (!utf8_ok(k)) return false;
    slot_ = &(*stack_.back())[k];
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t /*elements*/) { return open(J::array()); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/, const typename J::exception& e) {
    // nlohmann quotes the bytes it stopped at, whatever they are.
    if (error_.empty()) error_ = sanitize_utf8(e.what());
    return false;
  }

  J take(bool parsed) {
    if (!parsed || !error_.empty()) {
      throw JsonInputError(error_.empty() ? std::string{"incomplete input"} : error_);
    }
    return std::move(root_);
  }

 private:
  bool put(J value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      last_ = &root_;
    } else if (J& top = *stack_.back(); top.is_array()) {
      top.push_back(std::move(value));
      last_ = &top.back();
    } else {
      *slot_ = std::move(value);
      last_ = slot_;
    }
    return true;
  }
  bool open(J container) {
    if (stack_.size() >= max_depth_) {
      error_ = fmt::format("nesting deeper than {} levels of arrays and objects; no message is that deep", max_depth_);
      return false;
    }
    put(std::move(container));
    // The container's own place: stable while its children are added
    // (only the innermost open container grows).
    stack_.push_back(last_);
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  bool utf8_ok(const string_t& s) {
    if (!check_utf8_ || valid_utf8(s)) return true;
    error_ = "a CBOR text string is not valid UTF-8";
    return false;
  }

  std::size_t max_depth_;
  bool check_utf8_;
  J root_;
  std::vector<J*> stack_;
  J* slot_ = nullptr;  ///< the value of the object key just read
  J* last_ = nullptr;
  std::string error_;
};

}  // namespace

template <typename J>
J parse_json(std::string_view text, std::size_t max_depth) {
  BoundedBuilder<J> builder(max_depth, false);
  const bool ok = J::sax_parse(text.begin(), text.end(), &builder, nlohmann::json::input_format_t::json, true);
  return builder.take(ok);
}

template <typename J>
J parse_cbor(std::string_view bytes, std::size_t max_depth) {
  BoundedBuilder<J> builder(max_depth, true);
  const bool ok = J::sax_parse(bytes.begin(), bytes.end(), &builder, nlohmann::json::input_format_t::cbor, true);
  return builder.take(ok);
}

template nlohmann::ordered_json parse_json<nlohmann::ordered_json>(std::string_view, std::size_t);
template nlohmann::json parse_json<nlohmann::json>(std::string_view, std::size_t);
template nlohmann::ordered_json parse_cbor<nlohmann::ordered_json>(std::string_view, std::size_t);
template nlohmann::json parse_cbor<nlohmann::json>(std::string_view, std::size_t);

}  // namespace shmbus::schema
