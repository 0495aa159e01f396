int a;
int main() {
  return 1;
}
