// The compiler's version, part of every artifact's cache key. Generated at build time from the
// compiler's own sources (support/compiler_version.cmake), in its own small library
// (kiln_compiler_version), so kilnd can name it without linking the compiler.
#ifndef KILN_COMPILER_CORE_PIPELINE_COMPILER_VERSION_H_
#define KILN_COMPILER_CORE_PIPELINE_COMPILER_VERSION_H_

namespace kiln::pipeline {

/// "kiln-<release>+src.<16 hex>.llvm<LLVM version>", where the hex digits start the SHA-256 of
/// the compiler's sources (support/compiler_version.cmake says which files and how), so any
/// change to a pass, the lowering, a schedule, codegen or the artifact format gives a new
/// version.
extern const char kCompilerVersion[];
/// The full SHA-256 (hex) of the compiler sources that kCompilerVersion abbreviates.
extern const char kCompilerSourceDigest[];

}  // namespace kiln::pipeline

#endif  // KILN_COMPILER_CORE_PIPELINE_COMPILER_VERSION_H_
