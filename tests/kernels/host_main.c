/* Entry point for the executable fixtures; calls every TU's launcher once. */
int vector_ops_launch(int* ints, float* xs, float* ys, double* ds, int n);
int lds_static_launch(const float* in, float* out, const unsigned char* bytes,
                      unsigned* bins, unsigned n);
int lds_dynamic_launch(const float* in, float* out, int n);

int main(void) {
  static int ints[64];
  static float xs[64], ys[64];
  static double ds[64];
  static unsigned char bytes[64];
  static unsigned bins[256];
  int rc = vector_ops_launch(ints, xs, ys, ds, 64);
  rc |= lds_static_launch(xs, ys, bytes, bins, 64);
  rc |= lds_dynamic_launch(xs, ys, 64);
  return rc;
}
