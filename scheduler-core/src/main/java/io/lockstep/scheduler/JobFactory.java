package io.lockstep.scheduler;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Modifier;
import java.util.Optional;

/**
 * Turns a {@link JobDefinition} into the {@link Job} instance that runs it. The default loads the
 * class named in the definition from the thread's context class loader and calls its public no-arg
 * constructor; a dependency-injection container can supply its own.
 *
 * <p>Called once per definition when the scheduler is built; implementations need not be thread-safe.
 */
@FunctionalInterface
public interface JobFactory {

    /**
     * @throws LockstepException when the job cannot be created
     */
    Job create(JobDefinition definition);

    /**
     * Builds every enabled job of {@code definitions} with {@code factory} and checks its params
     * against its {@link Job#paramsType()}, as a scheduler built with the factory does, then closes
     * the jobs built that are {@link AutoCloseable}: what {@code lockstep validate} runs, so that it
     * refuses what {@code run} refuses.
     *
     * @throws io.lockstep.scheduler.config.ConfigException params that do not fit their type (the
     *     first job's whose do not, as {@code run} stops at it: {@code job NAME}, without a line: see
     *     {@link io.lockstep.scheduler.config.ConfigLoader#located})
     * @throws LockstepException a job the factory could not build
     */
    static void check(JobFactory factory, java.util.List<JobDefinition> definitions) {
        CreatedJobs.create(definitions, factory, true, new Events("validate")).close(java.util.Set.of());
    }

    /** The default factory: the definition's class by reflection, through its public no-arg constructor. */
    static JobFactory reflective() {
        return definition -> {
            String className = definition.jobClass();
            Optional<String> problem = problemWith(className);
            if (problem.isPresent()) {
                throw new LockstepException("job " + definition.name() + ": " + problem.get());
            }
            try {
                return (Job) loader().loadClass(className).getConstructor().newInstance();
            } catch (InvocationTargetException e) {
                throw new LockstepException("job " + definition.name() + ": constructor of " + className
                        + " failed: " + e.getCause(), e.getCause());
            } catch (ReflectiveOperationException e) {
                throw new LockstepException("job " + definition.name() + ": cannot create " + className + ": " + e, e);
            }
        };
    }

    /**
     * Why {@code className} cannot be instantiated as a job by {@link #reflective()}, or empty when it can:
     * the class must load, implement {@link Job}, be concrete and have a public no-arg constructor.
     */
    static Optional<String> problemWith(String className) {
        Optional<String> problem = typeProblem(className);
        if (problem.isPresent()) {
            return problem;
        }
        Class<?> type;
        try {
            type = Class.forName(className, false, loader());
        } catch (ClassNotFoundException | LinkageError e) {
            return Optional.of("class " + className + " not found " + where());
        }
        try {
            Constructor<?> constructor = type.getConstructor();
            if (!Modifier.isPublic(type.getModifiers())) {
                return Optional.of("class " + className + " is not public");
            }
            return constructor == null ? Optional.of("no constructor") : Optional.empty();
        } catch (NoSuchMethodException e) {
            return Optional.of("class " + className + " has no public no-arg constructor");
        }
    }

    /**
     * Why {@code className} cannot be a job class whatever factory builds it, or empty when it can:
     * the class must load (without being initialized), implement {@link Job} and be concrete. A
     * factory of the application's may build it however it likes; {@link #reflective()} also needs
     * a public no-arg constructor ({@link #problemWith}).
     */
    static Optional<String> typeProblem(String className) {
        Class<?> type;
        try {
            type = Class.forName(className, false, loader());
        } catch (ClassNotFoundException | LinkageError e) {
            return Optional.of("class " + className + " not found " + where());
        }
        if (!Job.class.isAssignableFrom(type)) {
            return Optional.of("class " + className + " does not implement " + Job.class.getName());
        }
        if (type.isInterface() || Modifier.isAbstract(type.getModifiers())) {
            return Optional.of("class " + className + " is abstract");
        }
        return Optional.empty();
    }

    /**
     * Why calling the public no-arg constructor of {@code className} fails (the class passed
     * {@link #problemWith}), or empty when it succeeds, after handing the job built to
     * {@code built} (its {@link Job#paramsType()} is what the config's params are checked against).
     * Runs the constructor once.
     */
    static Optional<String> constructionProblem(String className, java.util.function.Consumer<Job> built) {
        Object job;
        try {
            job = loader().loadClass(className).getConstructor().newInstance();
        } catch (InvocationTargetException e) {
            return Optional.of("constructor of " + className + " failed: " + oneLine(e.getCause()));
        } catch (ReflectiveOperationException | LinkageError e) {
            return Optional.of("cannot create " + className + ": " + oneLine(e));
        }
        if (job instanceof Job j) {
            built.accept(j);
        }
        return Optional.empty();
    }

    private static String oneLine(Throwable t) {
        String message = t.getMessage();
        return t.getClass().getName() + (message == null ? "" : ": " + message.replaceAll("\\s+", " ").trim());
    }

    /**
     * Where job classes are looked for, for a message: "on the class path", or in a class loader
     * that names itself (the worker's jobs directory names itself "in the jobs directory DIR").
     */
    private static String where() {
        String name = loader().getName();
        return name != null && name.startsWith("in ") ? name : "on the class path";
    }

    private static ClassLoader loader() {
        ClassLoader context = Thread.currentThread().getContextClassLoader();
        return context != null ? context : JobFactory.class.getClassLoader();
    }
}
