int a;
int main() {
  return 0;
}
