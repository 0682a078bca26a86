throw new Error("dlopen failed: libcudart.so.12: cannot open shared object file");
