//! Rule parsing and matching.
