// Schedule text parser over the loop IR lexer (in line mode): "kind(loop, ..., [factor])" per
// line or ';'-separated.
#include "compiler_core/schedule/schedule_parser.h"

#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler_core/ir/loop/lexer.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::schedule {
namespace {

using loop::DescribeToken;
using loop::ErrorAt;
using loop::Token;
using loop::TokenKind;

constexpr Primitive::Kind kKinds[] = {
    Primitive::Kind::kSplit,     Primitive::Kind::kReorder,   Primitive::Kind::kFuse,
    Primitive::Kind::kVectorize, Primitive::Kind::kUnroll,    Primitive::Kind::kParallel,
    Primitive::Kind::kWinograd,  Primitive::Kind::kComputeAt, Primitive::Kind::kBind,
    Primitive::Kind::kGpuTile,   Primitive::Kind::kGpuTileMma};

std::optional<Primitive::Kind> KindFromName(std::string_view name) {
  for (Primitive::Kind kind : kKinds) {
    if (name == PrimitiveKindName(kind)) return kind;
  }
  return std::nullopt;
}

bool IsStepEnd(const Token& tok) {
  return tok.kind == TokenKind::kNewline || tok.kind == TokenKind::kEof || tok.Is(";");
}

/// One step starting at tokens[*pos]; leaves *pos on the token after its ')'.
absl::StatusOr<Primitive> ParseStep(const std::vector<Token>& tokens, size_t* pos) {
  auto expected = [&](std::string_view what) {
    return ErrorAt(tokens[*pos], absl::StrCat("expected ", std::string(what), ", got ",
                                              DescribeToken(tokens[*pos])));
  };
  const Token& name = tokens[*pos];
  std::optional<Primitive::Kind> kind =
      name.kind == TokenKind::kIdent ? KindFromName(name.text) : std::nullopt;
  if (!kind) {
    return expected(
        "a schedule primitive (split, reorder, fuse, vectorize, unroll, parallel, winograd, "
        "compute_at, bind, gpu_tile or gpu_tile_mma)");
  }
  Primitive p{*kind, {}, 0};
  ++*pos;
  if (!tokens[*pos].Is("(")) return expected("'('");
  ++*pos;
  if (p.kind == Primitive::Kind::kWinograd) {
    const Token& arg = tokens[*pos];
    auto res = std::from_chars(arg.text.data(), arg.text.data() + arg.text.size(), p.factor);
    if (arg.kind != TokenKind::kNumber || res.ec != std::errc() ||
        res.ptr != arg.text.data() + arg.text.size()) {
      return expected("the output tile size (an integer)");
    }
    ++*pos;
    if (!tokens[*pos].Is(")")) return expected("')' after the tile size");
    ++*pos;
    return p;
  }
  while (true) {
    const Token& arg = tokens[*pos];
    const bool mma_factors = p.kind == Primitive::Kind::kGpuTileMma && p.loops.size() == 2;
    if ((p.kind == Primitive::Kind::kGpuTile && !p.loops.empty()) || mma_factors) {
      // gpu_tile(nest, tm, tn, bk), gpu_tile_mma(nest, precision, block, stages): the integers
      // after the names.
      int64_t value = 0;
      auto res = std::from_chars(arg.text.data(), arg.text.data() + arg.text.size(), value);
      if (arg.kind != TokenKind::kNumber || res.ec != std::errc() ||
          res.ptr != arg.text.data() + arg.text.size()) {
        return expected(mma_factors ? "an integer gpu_tile_mma factor"
                                    : "an integer gpu_tile factor");
      }
      p.factors.push_back(value);
      ++*pos;
      if (tokens[*pos].Is(",")) {
        ++*pos;
        continue;
      }
      if (!tokens[*pos].Is(")")) return expected("',' or ')'");
      if (mma_factors && p.factors.size() != 2) {
        return expected("2 gpu_tile_mma factors (block, stages)");
      }
      if (!mma_factors && p.factors.size() != 3) return expected("3 gpu_tile factors (tm, tn, bk)");
      break;
    }
    if (p.kind == Primitive::Kind::kSplit && !p.loops.empty() && arg.kind == TokenKind::kNumber) {
      auto res = std::from_chars(arg.text.data(), arg.text.data() + arg.text.size(), p.factor);
      if (res.ec != std::errc() || res.ptr != arg.text.data() + arg.text.size()) {
        return expected("an integer split factor");
      }
      ++*pos;
      if (!tokens[*pos].Is(")")) return expected("')' after the split factor");
      break;
    }
    if (arg.kind != TokenKind::kIdent) {
      return expected(p.kind == Primitive::Kind::kSplit && !p.loops.empty()
                          ? "a loop name or the split factor"
                          : "a loop name");
    }
    p.loops.push_back(std::string(arg.text));
    ++*pos;
    if (tokens[*pos].Is(",")) {
      ++*pos;
      continue;
    }
    if (!tokens[*pos].Is(")")) return expected("',' or ')'");
    if (p.kind == Primitive::Kind::kSplit) return expected("',' and the split factor");
    break;
  }
  ++*pos;  // the ')'
  return p;
}

}  // namespace

absl::StatusOr<Schedule> ParseSchedule(std::string_view text) {
  KILN_ASSIGN_OR_RETURN(std::vector<Token> tokens,
                        loop::Tokenize(text, loop::LexOptions{/*newlines=*/true}));
  Schedule schedule;
  size_t pos = 0;
  while (tokens[pos].kind != TokenKind::kEof) {
    if (IsStepEnd(tokens[pos])) {
      ++pos;
      continue;
    }
    KILN_ASSIGN_OR_RETURN(Primitive p, ParseStep(tokens, &pos));
    if (!IsStepEnd(tokens[pos])) {
      return ErrorAt(tokens[pos],
                     absl::StrCat("expected the end of the line or ';' after a step, got ",
                                  DescribeToken(tokens[pos])));
    }
    schedule.steps.push_back(std::move(p));
  }
  return schedule;
}

}  // namespace kiln::schedule
