//! Dense row-major matrices and the one GEMM entry point (`matrixmultiply`), so the rest of
//! the crate never touches raw pointers.

/// A view of a row-major (or strided) f32 matrix.
#[derive(Clone, Copy)]
pub struct MatRef<'a> {
    pub data: &'a [f32],
    pub rows: usize,
    pub cols: usize,
    /// Distance between consecutive rows / columns, in elements.
    pub row_stride: usize,
    pub col_stride: usize,
}

impl<'a> MatRef<'a> {
    /// A contiguous row-major matrix.
    pub fn rows(data: &'a [f32], rows: usize, cols: usize) -> Self {
        assert_eq!(data.len(), rows * cols, "matrix data does not match its shape");
        MatRef { data, rows, cols, row_stride: cols, col_stride: 1 }
    }

    /// The transpose (no copy).
    pub fn t(self) -> Self {
        MatRef { rows: self.cols, cols: self.rows, row_stride: self.col_stride, col_stride: self.row_stride, ..self }
    }

    /// Columns `start..start + n` (no copy).
    pub fn cols_range(self, start: usize, n: usize) -> Self {
        assert!(start + n <= self.cols);
        MatRef { data: &self.data[start * self.col_stride..], cols: n, ..self }
    }

    fn last_index(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            0
        } else {
            (self.rows - 1) * self.row_stride + (self.cols - 1) * self.col_stride
        }
    }
}

/// `c ← alpha·a·b + beta·c`, with `c` a contiguous row-major `a.rows × b.cols` matrix.
pub fn gemm(alpha: f32, a: MatRef<'_>, b: MatRef<'_>, beta: f32, c: &mut [f32]) {
    assert_eq!(a.cols, b.rows, "inner dimensions differ");
    assert_eq!(c.len(), a.rows * b.cols, "output has the wrong size");
    if a.rows == 0 || b.cols == 0 {
        return;
    }
    // The asserts above and these two bounds make every index the kernel reads in range.
    assert!(a.cols == 0 || (a.last_index() < a.data.len() && b.last_index() < b.data.len()));
    // SAFETY: shapes and strides were checked against the slices' lengths; `c` is contiguous,
    // row-major and does not alias `a` or `b` (it is a unique borrow).
    unsafe {
        matrixmultiply::sgemm(
            a.rows,
            a.cols,
            b.cols,
            alpha,
            a.data.as_ptr(),
            a.row_stride as isize,
            a.col_stride as isize,
            b.data.as_ptr(),
            b.row_stride as isize,
            b.col_stride as isize,
            beta,
            c.as_mut_ptr(),
            b.cols as isize,
            1,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemm_matches_the_definition_with_views() {
        // a: 2×3, b: 4×3 used transposed (3×4), columns 1..3 of it.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [1.0, 0.0, 2.0, 0.5, 1.0, -1.0, 3.0, 3.0, 3.0, 0.0, 1.0, 0.0];
        let bt = MatRef::rows(&b, 4, 3).t().cols_range(1, 2);
        let mut c = vec![1.0; 4];
        gemm(2.0, MatRef::rows(&a, 2, 3), bt, 1.0, &mut c);
        let want = |i: usize, j: usize| 1.0 + 2.0 * (0..3).map(|k| a[i * 3 + k] * b[(j + 1) * 3 + k]).sum::<f32>();
        assert_eq!(c, vec![want(0, 0), want(0, 1), want(1, 0), want(1, 1)]);
    }
}
