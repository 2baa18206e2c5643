/* A FUSE file system for cause_real_test: one file, /slow.txt (4096 bytes of 'x'), whose every
 * read takes 800 ms. Usage: cause_slow_fuse MOUNTPOINT (runs in the foreground, one thread;
 * prints "mounted" once the kernel answers its first request, so the test waits on a line). */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fuse.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char kPath[] = "/slow.txt";
enum { kSize = 4096 };

static void* slow_init(struct fuse_conn_info* conn, struct fuse_config* cfg) {
  (void)conn;
  cfg->direct_io = 1; /* every read reaches us: no page cache in between */
  printf("mounted\n");
  fflush(stdout);
  return NULL;
}

static int slow_getattr(const char* path, struct stat* st, struct fuse_file_info* fi) {
  (void)fi;
  memset(st, 0, sizeof *st);
  if (strcmp(path, "/") == 0) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
    return 0;
  }
  if (strcmp(path, kPath) != 0) return -ENOENT;
  st->st_mode = S_IFREG | 0444;
  st->st_nlink = 1;
  st->st_size = kSize;
  return 0;
}

static int slow_open(const char* path, struct fuse_file_info* fi) {
  if (strcmp(path, kPath) != 0) return -ENOENT;
  fi->direct_io = 1;
  return 0;
}

static int slow_read(const char* path, char* buf, size_t size, off_t offset,
                     struct fuse_file_info* fi) {
  (void)fi;
  if (strcmp(path, kPath) != 0) return -ENOENT;
  usleep(800 * 1000);
  if (offset >= kSize) return 0;
  if (offset + (off_t)size > kSize) size = (size_t)(kSize - offset);
  memset(buf, 'x', size);
  return (int)size;
}

static const struct fuse_operations kOps = {
    .getattr = slow_getattr,
    .open = slow_open,
    .read = slow_read,
    .init = slow_init,
};

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MOUNTPOINT\n", argv[0]);
    return 2;
  }
  char* args[] = {argv[0], argv[1], "-f", "-s", NULL};
  return fuse_main(4, args, &kOps, NULL);
}
