// Stands in for an ISA group (avx2, avx512, neon) that has no source yet, so its static library
// is never empty. Defines nothing.
